#!/usr/bin/env bash
# A dataset served over HTTP by a real nginx on a network-namespace host of its own, behind a
# link shaped with tc (tbf), and an agent on another host (ctest label integration; needs root,
# iproute2 and nginx):
#   - `corral datasets add NAME --source http://.../train.tar.gz` downloads the archive once and
#     makes its manifest;
#   - a job declaring the dataset runs on the agent, which downloads, unpacks, checks and
#     publishes it; the job reads every file, and what it reads is the source's content;
#   - a second job on the same node reads the cached copy: nginx serves no further request and
#     corral_dataset_source_read_bytes_total{source} stays as it was (the archive's size once);
#   - an archive changed behind its URL since it was added fails its job with a reason naming
#     the dataset and the URL; added again as another version, it lives beside the first
#     (NAME@V), and a job that names it reads the new content.
# FILES (default 1500) files of 4 KiB; RATE (default 16mbit) the source's shaped link.
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
# shellcheck source=../lib/skip.sh
. "$(dirname "$0")/../lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || skip "needs nginx (scripts/setup-tests.sh installs nginx-light)"
command -v tc >/dev/null || skip "needs tc (iproute2)"
# shellcheck source=../lib/netns_hosts.sh
. "$(dirname "$0")/../lib/netns_hosts.sh"
# shellcheck source=../lib/netns_cluster.sh
. "$(dirname "$0")/../lib/netns_cluster.sh"
# shellcheck source=../lib/netns_source.sh
. "$(dirname "$0")/../lib/netns_source.sh"

FILES=${FILES:-1500}
RATE=${RATE:-16mbit}
ID=$(( $$ % 30 + 220 ))  # beside the other netns tests' 20-219: no veth name in common
NET=10.79.$ID
W=$(mktemp -d /tmp/corral-dsurl.XXXXXX)
chmod 755 "$W"
SW=cds$ID-sw H=cds$ID-h S=cds$ID-s A=cds$ID-a
cleanup() {
  local rc=$?
  netns_cleanup
  netns_finish "$rc" "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

job_state() { corral show "$1" -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {  # wait_state ID STATE
  for _ in $(seq 300); do
    [ "$(job_state "$1" 2>/dev/null)" = "$2" ] && return 0
    sleep 0.2
  done
  corral show "$1" -o json
  fail "job $1 not $2"
}
# The agent's corral_dataset_source_read_bytes_total for a source (0 when absent).
source_bytes() {
  # From off the node: HTTPS (a certificate from the head; only the figures matter here) and
  # the join token.
  ip netns exec "$H" curl -sfk -H "Authorization: Bearer $(cat "$W/head/join.token")" \
    "https://$NET.3:7171/metrics" |
    awk -v want="corral_dataset_source_read_bytes_total{source=\"$1\"}" \
      '$1 == want { v = $2 } END { printf "%.0f\n", v + 0 }'
}
served() { grep -c "GET /$1 " "$W/access.log" || true; }
# What a job reads: every file's content, in path order, hashed (the same in the source).
READ='cd "$CORRAL_DATASET_TRAIN" && find . -type f | sort | xargs cat | sha256sum'

# The data: FILES files of 4 KiB of random bytes in 20 directories, packed by tar (gzip).
/usr/bin/python3 - "$W/src" "$FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "class%02d" % (i % 20))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "%05d.jpg" % i), "wb") as f:
        f.write(os.urandom(4096))
PY
mkdir -p "$W/www" "$W/small"
tar -C "$W/src" -czf "$W/www/train.tar.gz" .
for i in 1 2 3; do echo "sample $i" >"$W/small/$i.txt"; done
tar -C "$W/small" -cf "$W/www/small.tar" .
chmod -R a+rX "$W/www"
want=$(cd "$W/src" && find . -type f | sort | xargs cat | sha256sum)
archive_bytes=$(stat -c %s "$W/www/train.tar.gz")

netns_init "$SW"
netns_host "$H" "$NET.1"
netns_host "$S" "$NET.2"
netns_host "$A" "$NET.3"
netns_shape "$S" "$RATE"  # what the source sends leaves at RATE
netns_nginx "$S" "$NET.2" "$W/www" "$W" || fail "nginx"
netns_head "$H" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log"
ip netns exec "$A" "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
  --name node01 --run-as agent --state-dir "$W/node01" --simulate-gpus 1 --cpus 4 --memory 4G \
  --listen "$NET.3:7171" >"$W/node01.log" 2>&1 &
netns_wait_ready 1 || fail "the agent did not join"

URL="http://$NET.2/train.tar.gz"
corral datasets add train --source "$URL" || fail "datasets add"
[ "$(served train.tar.gz)" = 1 ] || fail "add fetched the archive $(served train.tar.gz) times, want 1"
corral datasets show train

first=$(corral submit --parsable --dataset train -- /bin/sh -c "$READ")
wait_state "$first" succeeded
[ "$(corral logs "$first")" = "$want" ] || fail "the first job read $(corral logs "$first"), want $want"
[ "$(served train.tar.gz)" = 2 ] || fail "the agent fetched $(( $(served train.tar.gz) - 1 )) times, want 1"
read_once=$(source_bytes "$URL")
[ "$read_once" = "$archive_bytes" ] || fail "source bytes $read_once, want the archive's $archive_bytes"

second=$(corral submit --parsable --dataset train -- /bin/sh -c "$READ")
wait_state "$second" succeeded
[ "$(corral logs "$second")" = "$want" ] || fail "the second job read another content"
[ "$(served train.tar.gz)" = 2 ] || fail "the second job reached the source"
[ "$(source_bytes "$URL")" = "$read_once" ] || fail "source bytes moved: $(source_bytes "$URL")"

# Every byte went through the shaped link: tbf counted both downloads.
sent=$(netns_shaped_bytes "$S")
[ "$sent" -ge $(( 2 * archive_bytes )) ] || fail "the shaped link sent $sent bytes, want >= 2 x $archive_bytes"

# An archive changed behind its URL since it was added: the job fails naming both.
corral datasets add small --source "http://$NET.2/small.tar" || fail "datasets add small"
echo "changed" >"$W/small/2.txt"
tar -C "$W/small" -cf "$W/www/small.tar.new" . && mv "$W/www/small.tar.new" "$W/www/small.tar"
chmod a+r "$W/www/small.tar"
stale=$(corral submit --parsable --dataset small -- /bin/true)
wait_state "$stale" failed
why=$(corral show "$stale" -o json)
echo "$why" | grep -q "dataset small from http://$NET.2/small.tar" || fail "no dataset and source in: $why"
echo "$why" | grep -q "changed since it was added" || fail "no reason in: $why"
# The changed archive added as a second version beside the first: a job names it (NAME@V)
# and reads it; removing the first version leaves the second.
first_version=$(corral datasets show small -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
corral datasets add small --source "http://$NET.2/small.tar" --version v2 || fail "add small@v2"
[ "$(corral datasets -o json | grep -c '"name": "small"')" = 2 ] || fail "not two versions: $(corral datasets)"
newer=$(corral submit --parsable --dataset small@v2 -- /bin/sh -c 'cat "$CORRAL_DATASET_SMALL/2.txt"')
wait_state "$newer" succeeded
[ "$(corral logs "$newer")" = "changed" ] || fail "small@v2 read $(corral logs "$newer")"
corral datasets rm "small@$first_version" || fail "rm small@$first_version"
[ "$(corral datasets show small -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')" = v2 ] ||
  fail "small is not v2 after the first version's removal"
echo "PASS: $FILES files ($archive_bytes bytes at $RATE) fetched once, the second job read the cache"
