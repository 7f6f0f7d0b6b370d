#!/usr/bin/env bash
# The Debian packages end to end, as root on this machine (no systemd: the units' ExecStart
# lines are run by hand): build them (scripts/package.sh), install them with dpkg -i, check the
# installed units (tests/units_test.py against /lib/systemd/system and /usr/bin/corral), run the
# installed head as _corral and an agent, run a job through the installed CLI, upgrade to a
# rebuilt package with a newer version (the job, the store and an edited conffile kept), then
# remove (state kept) and purge (state and conffiles gone).
set -euo pipefail
# shellcheck source=lib/skip.sh
. "$(dirname "$0")/lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "package_test needs root (dpkg -i)"
src="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/corral-package-test.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  dpkg -P corral-agent corral-head python3-corral corral >/dev/null 2>&1 || true
  rm -f /etc/corral/join.token
  rmdir /etc/corral 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# One build place for every checkout on this machine: dpkg's -ffile-prefix-map names it in each
# compile command, so with a place per checkout a fresh clone could never reuse the objects
# ccache holds from the last run. The lock keeps two runs out of it at once.
stage_dir=/var/tmp/corral-package-test
exec 9>/var/tmp/corral-package-test.lock
flock 9
packages() {  # VERSION [LINTIAN]
  # Unoptimised and without debug information (optimisation and debug information are most of
  # a build's compile time; noddebs: no dbgsym package): what is tested here is the packaging,
  # on every CI run. Both versions share every object but the version's own file, and lintian
  # checks the first.
  (cd "$src" && VERSION="$1" LINTIAN="${2:-1}" OUT_DIR="$work/dist-$1" STAGE_DIR="$stage_dir" \
    DEB_CXXFLAGS_APPEND=-g0 DEB_BUILD_OPTIONS="noopt noddebs ${DEB_BUILD_OPTIONS:-}" \
    ./scripts/package.sh >"$work/package-$1.log" 2>&1) ||
    { tail -50 "$work/package-$1.log" >&2; fail "package.sh VERSION=$1" >&2; }
  echo "$work/dist-$1"/*_"$1"_*.deb
}
port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
start_head() {  # the unit's ExecStart, as its User=, with /etc/default/corral-head's flags
  # shellcheck disable=SC1091
  . /etc/default/corral-head
  runuser -u _corral -- /usr/bin/corral head --state-dir /var/lib/corral/head $CORRAL_HEAD_OPTS \
    >>"$work/head.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.2; done
  cat "$work/head.log"
  fail "the installed head did not start"
}
start_agent() {
  /usr/bin/corral agent --name pkg-node --state-dir /var/lib/corral/agent \
    --join-token-file /etc/corral/join.token --head "http://127.0.0.1:$port" --simulate-gpus 1 \
    --run-as agent >>"$work/agent.log" 2>&1 &
  pids+=($!)
}
stop_daemons() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
cli() { CORRAL_ADDR="http://127.0.0.1:$port" CORRAL_TOKEN="$(cat /var/lib/corral/head/admin.token)" \
  CORRAL_CONFIG=/nonexistent /usr/bin/corral "$@"; }

v1="0.0.1+test1"
v2="0.0.1+test2"
echo "== build $v1"
debs="$(packages "$v1")"
read -ra debs1 <<<"$debs"
echo "== install $v1: ${debs1[*]##*/}"
dpkg -i "${debs1[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i"; }
[ "$(/usr/bin/corral --version)" = "corral $v1" ] || fail "corral --version: $(/usr/bin/corral --version)"
getent passwd _corral >/dev/null || fail "no system user _corral"
[ "$(stat -c %U /var/lib/corral/head)" = _corral ] || fail "/var/lib/corral/head not _corral's"
[ -x /usr/lib/corral/slurm-shims/sbatch ] || fail "no Slurm shims"
grep -qx /etc/default/corral-head /var/lib/dpkg/info/corral-head.conffiles || fail "not a conffile"
/usr/bin/python3 -c 'import corral; print(corral.Client)' >/dev/null || fail "python3-corral"

echo "== the installed units, with a fake notify socket"
CORRAL=/usr/bin/corral UNITS=/lib/systemd/system /usr/bin/python3 "$src/tests/units_test.py" ||
  fail "the installed units"

echo "== a job through the installed CLI"
sed -i "s/^CORRAL_HEAD_OPTS=.*/CORRAL_HEAD_OPTS=\"--listen 127.0.0.1:$port\"/" /etc/default/corral-head
start_head
cp /var/lib/corral/head/join.token /etc/corral/join.token
start_agent
id="$(cli submit --parsable -- echo hello from the package)"
cli wait "$id" --timeout 60s >/dev/null || { cat "$work/agent.log"; fail "job $id"; }
[ "$(cli logs "$id")" = "hello from the package" ] || fail "job $id's log: $(cli logs "$id")"
stop_daemons

echo "== upgrade to $v2"
debs="$(packages "$v2" 0)"
read -ra debs2 <<<"$debs"
dpkg -i "${debs2[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "upgrade"; }
[ "$(/usr/bin/corral --version)" = "corral $v2" ] || fail "after the upgrade: $(/usr/bin/corral --version)"
grep -q "127.0.0.1:$port" /etc/default/corral-head || fail "the edited conffile was replaced"
start_head
cli show "$id" -o json | grep -q '"state": *"succeeded"' || fail "job $id lost in the upgrade"
[ "$(curl -sf "http://127.0.0.1:$port/v1/version")" = "{\"version\":\"$v2\"}" ] || fail "API version"
stop_daemons

echo "== remove, then purge"
dpkg -r corral-agent corral-head python3-corral corral >"$work/dpkg.log" 2>&1 || fail "dpkg -r"
[ -f /var/lib/corral/head/corral.db ] || fail "remove took the state"
[ -f /etc/default/corral-head ] || fail "remove took the conffile"
rm /etc/corral/join.token  # the operator's, not the package's
dpkg -P corral-agent corral-head python3-corral corral >"$work/dpkg.log" 2>&1 || fail "dpkg -P"
for gone in /var/lib/corral /etc/default/corral-head /etc/default/corral-agent /etc/corral \
  /usr/bin/corral /usr/lib/corral /lib/systemd/system/corral-head.service; do
  [ ! -e "$gone" ] || fail "$gone left after purge"
done
echo "package_test: passed"
