#!/usr/bin/env bash
# Reproduces every number and plot in docs/simulation.md. Usage, from the repository root:
#   cmake -S . -B build-sim -G Ninja -DCORRAL_ONLY="core;sched;store;head;sim" && ninja -C build-sim corral_simulate
#   src/sim/experiments.sh [build-sim/src/sim/corral_simulate] [/work/shared/traces] > results.txt
# Tables go to stdout; SVGs to docs/img/. Deterministic except the wall_s column.
set -euo pipefail
SIM=${1:-build-sim/src/sim/corral_simulate}
T=${2:-/work/shared/traces}
IMG=docs/img
mkdir -p "$IMG"
ALL=fifo,sjf,srtf,las,corral

run() { echo; echo "\$ corral simulate $*"; "$SIM" "$@"; }

echo "## Philly (philly-pollux/philly.csv, 82,247 jobs), whole trace"
for n in 64 80 96; do
  run --trace "$T/philly-pollux/philly.csv" --nodes $n --gpus-per-node 8 --compare $ALL \
      --plot "$IMG/philly-$((n * 8))gpus.svg" --title "Philly, 82,247 jobs, $((n * 8)) GPUs"
done
echo; echo "## Philly, corral with Philly VC sizes as quotas (helios-aggregates/philly_vc_nodes.csv)"
for n in 80 64; do
  run --trace "$T/philly-pollux/philly.csv" --nodes $n --policy corral \
      --quotas "$T/helios-aggregates/philly_vc_nodes.csv"
done
echo; echo "## Philly, corral with other fair-share half-lives (640 GPUs)"
for hl in 1h 1d; do
  run --trace "$T/philly-pollux/philly.csv" --nodes 80 --policy corral --fair-share-half-life $hl
done
echo; echo "## Philly with a 5-minute restart overhead and hourly checkpoints (640 GPUs)"
run --trace "$T/philly-pollux/philly.csv" --nodes 80 --compare srtf,las,corral \
    --restart-overhead 5m --checkpoint-interval 1h --preempt-grace 30s

echo; echo "## Predicted durations (corral), every policy at 512/640/768 GPUs and 1.2x load"
P="$T/philly-pollux/philly.csv"
for g in 512 640 768; do
  run --trace "$P" --gpus $g --compare $ALL
  for pr in none oracle; do run --trace "$P" --gpus $g --policy corral --predict $pr; done
done
run --trace "$P" --gpus 640 --load-scale 1.2 --compare $ALL
for pr in none oracle; do run --trace "$P" --gpus 640 --load-scale 1.2 --policy corral --predict $pr; done
echo; echo "## What each prediction input buys, 640 GPUs"
for w in 0.05 0.25 0.75 1; do run --trace "$P" --gpus 640 --policy corral --predict-weight $w; done
for w in 0.25 0.5; do
  run --trace "$P" --gpus 640 --policy corral --predict queue-gpus --predict-weight $w
done
for pr in none time-limit user-name,user,queue,time-limit; do
  run --trace "$P" --gpus 640 --policy corral --synth-time-limits --predict $pr
done
for g in 512 768; do run --trace "$P" --gpus $g --policy corral --synth-time-limits; done
run --trace "$P" --gpus 640 --load-scale 1.2 --policy corral --synth-time-limits
echo; echo "## Borrowing queues by level (corral, JSON)"
for sz in "512" "640" "768" "640 --load-scale 1.2"; do
  for fl in "" "--no-borrowing-queues-by-level" "--predict oracle" "--predict none"; do
    # shellcheck disable=SC2086
    run --trace "$P" --gpus $sz --policy corral --no-timing -o json $fl
  done
done
for sz in "576" "704" "640 --load-scale 1.1" "512 --load-scale 0.9" \
          "640 --quotas $T/helios-aggregates/philly_vc_nodes.csv" \
          "640 --restart-overhead 5m --checkpoint-interval 1h --preempt-grace 30s"; do
  for fl in "" "--no-borrowing-queues-by-level"; do
    # shellcheck disable=SC2086
    run --trace "$P" --gpus $sz --policy corral --no-timing -o json $fl
  done
done
echo; echo "## Node failures and restart costs, 640 GPUs"
run --trace "$P" --gpus 640 --compare srtf,las,corral --node-mtbf 1000h --restart-overhead 5m \
    --checkpoint-interval 1h

echo; echo "## Pollux's sampling of Philly (160 jobs, 02:00-10:00 window), 16 nodes x 4 GPUs"
echo "(per seed: policy, avg JCT h, p99 JCT h, preemptions; the flags are those of the run below)"
for seed in 1 2 3 4 5 6 7 8; do
  "$SIM" --trace "$T/philly-pollux/philly.csv" --min-duration 60s --max-gpu-time 1000h \
      --time-of-day 2h-10h --sample 160 --seed $seed --nodes 16 --gpus-per-node 4 \
      --compare $ALL -o json --no-timing |
    jq -r '.[] | [.policy, (.avg_jct/3600), (.p99_jct/3600), .preemptions] | @tsv' |
    sed "s/^/seed $seed\t/"
done
run --trace "$T/philly-pollux/philly.csv" --min-duration 60s --max-gpu-time 1000h \
    --time-of-day 2h-10h --sample 160 --seed 1 --nodes 16 --gpus-per-node 4 --compare $ALL \
    --plot "$IMG/pollux-sample-64gpus.svg" --title "Philly, Pollux sampling (seed 1), 64 GPUs"

echo; echo "## Tiresias 60_job.csv"
run --trace "$T/tiresias/60_job.csv" --nodes 16 --gpus-per-node 4 --compare $ALL
run --trace "$T/tiresias/60_job.csv" --nodes 2 --gpus-per-node 4 --compare $ALL \
    --plot "$IMG/tiresias-60job-8gpus.svg" --title "Tiresias 60_job.csv, 8 GPUs"

run --trace "$T/tiresias/60_job.csv" --nodes 2 --gpus-per-node 4 --compare las \
    --las-thresholds 5m,1h --min-preempt-runtime 0s
run --trace "$T/tiresias/60_job.csv" --nodes 2 --gpus-per-node 4 --compare srtf \
    --min-preempt-runtime 0s

echo; echo "## Gavel per-VC traces (steps at 10 steps/s), each on its Philly VC size"
for vc in 6214e9:64 ee9e8c:64 b436b2:64 2869ce:16; do
  f=${vc%%:*}; nodes=${vc##*:}
  run --trace "$T/philly-gavel/msr-seed0/$f.trace" --gavel-steps-per-second 10 --nodes $nodes \
      --compare $ALL
done
f=b436b2
run --trace "$T/philly-gavel/msr-seed0/$f.trace" --gavel-steps-per-second 10 --nodes 64 \
    --compare $ALL --plot "$IMG/gavel-$f-512gpus.svg" --title "Gavel VC $f, 512 GPUs"

echo; echo "## philly-users: learn on the first half, report on the second"
U="$T/philly-users/philly_data_training.csv"
for g in 512 640; do
  for half in "--end 4473032s" "--report-from 50%"; do
    # shellcheck disable=SC2086
    run --trace "$U" --gpus $g $half --no-timing --compare fifo,srtf,las,corral
    for fl in "--predict none" "--predict oracle" "--predict-levels none" \
              "--predict-levels 200h" "--las-thresholds 1h,10h,200h --predict-levels none" \
              "--predict-levels none --predict-rule running-mean" \
              "--predict-levels none --predict user,queue" \
              "--predict-levels none --predict-rule gittins --predict-window 32" \
              "--predict-levels none --predict-fresh-by-mean"; do
      # shellcheck disable=SC2086
      run --trace "$U" --gpus $g $half --no-timing --policy corral $fl
    done
  done
done

echo; echo "## The tail: the age bound for every job (corral, JSON: p99 JCT, p99 waits)"
for sz in "--trace $P --gpus 512" "--trace $P --gpus 640" "--trace $P --gpus 768" \
          "--trace $P --gpus 640 --load-scale 1.2" "--trace $U --gpus 512 --report-from 50%" \
          "--trace $U --gpus 640 --report-from 50%"; do
  # shellcheck disable=SC2086
  run $sz --compare fifo,las,corral --no-timing -o json
  # shellcheck disable=SC2086
  run $sz --policy corral --max-wait 24h --aged-no-displace --no-timing -o json
done
run --trace "$P" --gpus 512 --policy corral --max-wait 24h --no-timing -o json

echo; echo "## Helios and Alibaba PAI: no job-level data here"
for f in helios-aggregates/helios_cluster_summary.csv helios-aggregates/philly_vc_nodes.csv \
         alibaba-pai-2020/pai_machine_spec.csv; do
  run --trace "$T/$f" --nodes 8 --policy fifo || true
done

echo; echo "## Speed: 20,000 jobs on 2,048 GPUs (first 20,000 Philly jobs; x1 and x6 load)"
run --trace "$T/philly-pollux/philly.csv" --limit 20000 --nodes 256 --compare $ALL
run --trace "$T/philly-pollux/philly.csv" --limit 20000 --nodes 256 --load-scale 6 --compare $ALL
echo; echo "## Speed: where the time goes (wall time inside Scheduler::Schedule), 512 GPUs"
run --trace "$T/philly-pollux/philly.csv" --nodes 64 --compare srtf,corral --profile -o json |
  grep -E '"policy"|schedule_calls|wall_time'
