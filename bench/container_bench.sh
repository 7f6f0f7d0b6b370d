#!/usr/bin/env bash
# Containers (docs/containers.md): submit-to-done of a trivial job (`true`) without an image and
# in a cached image (p50, p90 of N sequential jobs each), and a cold pull of a ~100 MB image
# from a registry on loopback. Root (crun), with crun, skopeo, umoci, busybox-static and
# docker-registry installed (scripts/setup-tests.sh).
#   CORRAL=build/corral N=30 bench/container_bench.sh
set -euo pipefail
CORRAL="$(realpath "${CORRAL:-build/corral}")"
N="${N:-30}"
[ "$(id -u)" = 0 ] || { echo "container_bench: needs root" >&2; exit 77; }
D="$(mktemp -d /tmp/corral-container-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 1; rm -rf "$D"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Images: busybox, and busybox with 100 MB of random bytes (they do not compress).
mkdir -p "$D/small/bin" "$D/big/bin"
for r in small big; do
  cp /bin/busybox "$D/$r/bin/busybox"
  for a in sh true cat; do ln -s busybox "$D/$r/bin/$a"; done
done
head -c 100000000 /dev/urandom > "$D/big/blob"
(cd "$D" && umoci init --layout layout && for r in small big; do
  umoci new --image "layout:$r" && umoci insert --image "layout:$r" "$D/$r" / >/dev/null
done)
REG="127.0.0.1:$(port)"
printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s/registry\nhttp:\n  addr: %s\n' \
  "$D" "$REG" > "$D/registry.yml"
docker-registry serve "$D/registry.yml" > "$D/registry.log" 2>&1 & PIDS+=($!)
for _ in $(seq 50); do curl -sf "http://$REG/v2/" >/dev/null && break; sleep 0.1; done
for r in small big; do
  skopeo --insecure-policy copy --quiet --dest-tls-verify=false "oci:$D/layout:$r" \
    "docker://$REG/bench/$r:v1"
done

"$CORRAL" up --agents 1 --gpus-per-agent 1 --state-dir "$D/cluster" --listen "127.0.0.1:$(port)" \
  --no-user-config > "$D/up.log" 2>&1 & PIDS+=($!)
export CORRAL_CONFIG="$D/cluster/client.json"
for _ in $(seq 100); do [ -f "$CORRAL_CONFIG" ] && "$CORRAL" nodes 2>/dev/null | grep -q ready && break; sleep 0.2; done

# submit-to-done of one job, in ms
run() {
  local id
  id="$("$CORRAL" submit --parsable "$@" -- true)"
  "$CORRAL" wait --timeout 120s "$id" >/dev/null
  "$CORRAL" show "$id" -o json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["state"] == "succeeded", j
print(j["ended_at"] - j["submitted_at"])'
}
stats() { sort -n | awk '{a[NR]=$1} END {printf "p50 %d ms, p90 %d ms (%d jobs)\n", a[int((NR+1)/2)], a[int(NR*0.9+0.5)], NR}'; }

run --image "$REG/bench/small:v1" > /dev/null  # into the cache
echo "cold pull, ~100 MB image: submit-to-done $(run --image "$REG/bench/big:v1") ms"
"$CORRAL" show "$("$CORRAL" jobs -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
  | grep -o "image [^ ]* pulled on [^ ]* in [0-9]* ms" || true
for mode in plain image; do
  args=()
  [ "$mode" = image ] && args=(--image "$REG/bench/small:v1")
  for _ in $(seq "$N"); do run "${args[@]}"; done | stats | sed "s/^/$mode: submit-to-done /"
done
