# Sourced by the benchmarks that compare a plain-HTTP head with a --tls one: starts two
# `corral up` clusters of AGENTS agents x GPUS GPUs (state under $work/plain and $work/tls, API
# on 127.0.0.1:$port and $port+1), waits until both heads serve, and stops them on exit.
#   WORK_PREFIX=name AGENTS=n GPUS=n . bench/lib/plain_and_tls_clusters.sh
# Sets: here, bin, work, port, pids.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${BIN:-$here/build}"
work=$(mktemp -d "/tmp/corral-${WORK_PREFIX:-bench}.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
"$bin/corral" up --no-user-config --agents "${AGENTS:-1}" --gpus-per-agent "${GPUS:-2}" \
  --state-dir "$work/plain" --listen "127.0.0.1:$port" >"$work/plain.log" 2>&1 &
pids+=($!)
"$bin/corral" up --no-user-config --agents "${AGENTS:-1}" --gpus-per-agent "${GPUS:-2}" \
  --state-dir "$work/tls" --listen "127.0.0.1:$((port + 1))" --tls >"$work/tls.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do
  grep -q "corral up: head on" "$work/plain.log" && grep -q "corral up: head on" "$work/tls.log" &&
    break
  sleep 0.5
done
grep -q "corral up: head on" "$work/tls.log" || { cat "$work"/*.log; exit 1; }
