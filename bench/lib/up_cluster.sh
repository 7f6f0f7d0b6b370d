# Sourced by the service benches: a `corral up` cluster (one agent, 2 simulated GPUs) on a
# random loopback port, in a work directory removed on exit, with the CLI pointed at it
# (CORRAL_ADDR, CORRAL_TOKEN). Sets `here` (the repository), `bin`, `work` and `pid` (the
# cluster's).
#
#   start_up_cluster NAME   # work dir /tmp/NAME.XXXXXX
start_up_cluster() {
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  bin="${BIN:-$here/build}"
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$work"
  pid=
  trap 'cleanup_up_cluster' EXIT
  local port=$((20000 + RANDOM % 20000))
  "$bin/corral" up --no-user-config --agents 1 --gpus-per-agent 2 --state-dir "$work/up" \
    --listen "127.0.0.1:$port" >"$work/up.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do
    grep -q "corral up: head on" "$work/up.log" && break
    sleep 0.5
  done
  export CORRAL_CONFIG=/nonexistent CORRAL_ADDR="http://127.0.0.1:$port"
  CORRAL_TOKEN="$(cat "$work/up/admin.token")"
  export CORRAL_TOKEN
}

cleanup_up_cluster() {
  [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
