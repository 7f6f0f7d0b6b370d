#!/usr/bin/env bash
# A job's read of a dataset of many small files from a throttled HTTP source against from the
# node's cache (docs/benchmarks.md, "Datasets: a throttled source"). Network-namespace hosts
# (root): nginx on its own host behind a tc-shaped link serves the files and the same files
# as a .tar.gz; a head; an agent. Three jobs on the agent's node, each timing its own read:
#   direct   reads every file over HTTP from the source (curl, one kept connection), as a job
#            without Corral's cache reads shared storage every epoch;
#   first    declares the dataset (a URL): the agent downloads, unpacks, checks and publishes
#            it (the stage-in, timed by the agent), then the job reads every file from the copy;
#   second   declares it again: cached, no stage-in, reads the copy.
#   bench/dataset_read.sh [FILES] [BYTES_PER_FILE] [RATE]    (defaults 5000 4096 100mbit)
set -euo pipefail
cd "$(dirname "$0")/.."
CORRAL=${CORRAL:-$PWD/build/corral}
FILES=${1:-5000} SIZE=${2:-4096} RATE=${3:-100mbit}
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 1; }
. tests/lib/netns_hosts.sh
. tests/lib/netns_cluster.sh
. tests/lib/netns_source.sh

ID=$(( $$ % 30 + 220 ))
NET=10.79.$ID
W=$(mktemp -d /tmp/corral-dsread.XXXXXX)
chmod 755 "$W"
SW=cdb$ID-sw H=cdb$ID-h S=cdb$ID-s A=cdb$ID-a
trap 'netns_cleanup; rm -rf "$W"' EXIT

/usr/bin/python3 - "$W/www/files" "$FILES" "$SIZE" <<'PY'
import os, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(root, "class%02d" % (i % 50))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "%06d.jpg" % i), "wb") as f:
        f.write(os.urandom(size))
PY
tar -C "$W/www/files" -czf "$W/www/train.tar.gz" .
(cd "$W/www" && find files -type f | sort | sed "s|^|url = http://$NET.2/|; s|$|\noutput = /dev/null|") >"$W/urls"
chmod -R a+rX "$W"

netns_init "$SW"
netns_host "$H" "$NET.1"
netns_host "$S" "$NET.2"
netns_host "$A" "$NET.3"
netns_shape "$S" "$RATE"
netns_nginx "$S" "$NET.2" "$W/www" "$W"
netns_head "$H" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log"
ip netns exec "$A" "$CORRAL" agent --head "$CORRAL_ADDR" --join-token-file "$W/head/join.token" \
  --name node01 --run-as agent --state-dir "$W/node01" --simulate-gpus 1 --cpus 4 --memory 4G \
  >"$W/node01.log" 2>&1 &
netns_wait_ready 1

state() { corral show "$1" -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
run_job() {  # run_job ARGS... : submits, waits, prints the job's own output
  local id t0
  id=$(corral submit --parsable "$@")
  while :; do
    case "$(state "$id")" in succeeded) break ;; failed|cancelled) corral show "$id"; exit 1 ;; esac
    sleep 0.2
  done
  corral logs "$id"
}
now() { date +%s.%N; }
TIMED='s=$(date +%s.%N); '
READ_COPY='cd "$CORRAL_DATASET_TRAIN" && find . -type f -print0 | xargs -0 cat >/dev/null'
READ_HTTP="curl -sf -K $W/urls"
ELAPSED='; e=$(date +%s.%N); echo "$s $e" | awk "{ print \$2 - \$1 }"'

direct=$(run_job -- /bin/sh -c "$TIMED$READ_HTTP$ELAPSED")
corral datasets add train --source "http://$NET.2/train.tar.gz" >/dev/null
t0=$(now)
first=$(run_job --dataset train -- /bin/sh -c "$TIMED$READ_COPY$ELAPSED")
first_wall=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')
t0=$(now)
second=$(run_job --dataset train -- /bin/sh -c "$TIMED$READ_COPY$ELAPSED")
second_wall=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')
stage_ms=$(awk '{ print $3 }' "$W"/node01/datasets/fetches)
mib=$(awk -v n="$FILES" -v s="$SIZE" 'BEGIN { printf "%.1f", n * s / 1048576 }')
tgz=$(stat -c %s "$W/www/train.tar.gz")
echo "dataset: $FILES files x $SIZE B = $mib MiB ($(awk -v b="$tgz" 'BEGIN { printf "%.1f", b / 1048576 }') MiB .tar.gz), source link $RATE"
awk -v d="$direct" -v f="$first" -v s="$second" -v st="$stage_ms" -v fw="$first_wall" \
    -v sw="$second_wall" -v mib="$mib" 'BEGIN {
  printf "job read, every file over HTTP from the source: %.2f s\n", d
  printf "stage-in from the URL (download, unpack, check, publish): %.2f s (%.1f MiB/s of files)\n", st / 1000, mib / (st / 1000)
  printf "job read from the cache: first job %.3f s, second job %.3f s\n", f, s
  printf "ratio source / cache (read): %.0fx\n", d / s
  printf "submit to done: first job %.2f s, second job %.2f s\n", fw, sw
}'
