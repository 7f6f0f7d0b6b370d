#!/usr/bin/env bash
# A node's local socket across a real network (ctest label security; needs root and iproute2):
# the head on one network-namespace host (HTTPS), an agent on another serving --unix-socket, and
# a Unix user this test makes running `corral` on the node's host with nothing configured but
# the socket. The user is their Unix user at the head (whoami, a job's owner), a token over the
# socket is refused, and with the node's link cut the socket answers that the head cannot be
# reached (once the agent's tries end), then works again once the link is back.
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
# shellcheck source=lib/skip.sh
. "$(dirname "$0")/lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces and useradd"
# shellcheck source=lib/netns_hosts.sh
. "$(dirname "$0")/lib/netns_hosts.sh"
# shellcheck source=lib/netns_cluster.sh
. "$(dirname "$0")/lib/netns_cluster.sh"

ID=$(( $$ % 5 + 250 ))  # beside the other netns tests' 20-249: no veth name in common
NET=10.81.$ID
W=$(mktemp -d /tmp/corral-nodesock.XXXXXX)
chmod 755 "$W"
SW=cns$ID-sw H=cns$ID-h A=cns$ID-a
USER_NAME=corral-ns-$$
SOCK=$W/node-run/corral.sock
cleanup() {
  local rc=$?
  netns_cleanup
  userdel --remove "$USER_NAME" 2>/dev/null || true
  netns_finish "$rc" "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

useradd --create-home --shell /bin/sh "$USER_NAME"
uid=$(id -u "$USER_NAME")
# `corral ARGS...` as the user, on the node's host, with no token, address or config.
as_user() {
  ip netns exec "$A" runuser -u "$USER_NAME" -- env -i PATH=/usr/bin:/bin HOME=/nonexistent \
    CORRAL_SOCKET="$SOCK" "$CORRAL" "$@"
}
field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

netns_init "$SW"
netns_host "$H" "$NET.1"
netns_host "$A" "$NET.2"
netns_head "$H" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log"
ip netns exec "$A" "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
  --name node01 --run-as agent --state-dir "$W/node01" --simulate-gpus 1 --cpus 4 --memory 4G \
  --unix-socket "$SOCK" --lease 60 >"$W/node01.log" 2>&1 &
netns_wait_ready 1 || fail "the agent did not join"
[ -S "$SOCK" ] || fail "no socket at $SOCK"
[ "$(stat -c %a "$SOCK")" = 666 ] || fail "socket mode $(stat -c %a "$SOCK"), want 666"

who=$(as_user whoami -o json) || fail "whoami on the node's socket"
[ "$(echo "$who" | field user)" = "$USER_NAME" ] || fail "whoami: $who"
[ "$(echo "$who" | field via)" = node_socket ] || fail "whoami: $who"
[ "$(echo "$who" | field uid)" = "$uid" ] || fail "whoami: $who"

job=$(as_user submit --parsable -- /bin/true) || fail "submit on the node's socket"
as_user wait "$job" --timeout 60s >/dev/null || fail "job $job did not succeed"
owner=$(corral show "$job" -o json | field owner)  # the admin, at the head
[ "$owner" = "$USER_NAME" ] || fail "job $job is $owner's, want $USER_NAME's"

code=$(ip netns exec "$A" runuser -u "$USER_NAME" -- curl -s -o /dev/null -w '%{http_code}' \
  --unix-socket "$SOCK" -H "Authorization: Bearer $CORRAL_TOKEN" http://localhost/v1/whoami)
[ "$code" = 400 ] || fail "a token over the node's socket: $code, want 400"

# The node cut off: the user hears that the head cannot be reached; healed, it works again.
netns_cut "$A"
start=$(date +%s)
if out=$(as_user whoami 2>&1); then fail "whoami answered with the node cut off: $out"; fi
echo "$out" | grep -q "cannot reach the head" || fail "cut off: $out"
echo "cut off: answered after $(( $(date +%s) - start )) s: $out"
netns_heal "$A"
for _ in $(seq 100); do as_user whoami >/dev/null 2>&1 && break; sleep 0.2; done
[ "$(as_user whoami -o json | field user)" = "$USER_NAME" ] || fail "whoami after the heal"
echo "PASS"
