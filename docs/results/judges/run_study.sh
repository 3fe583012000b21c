#!/usr/bin/env bash
# Issue #30's study: RL gain over SFT against step-judge error, and the cautionary reward
# against the default under a lenient judge (and, as a control, the cautionary reward under the
# exact judge), on the `make demo` setting (preset demo, seed 0).
#
#   D=/work/judge_runs P=1 SEEDS="0 1" bash docs/results/judges/run_study.sh
#   then: python docs/results/judges/analyze.py $D
#
# One SFT (shared by every arm), then one RL run per arm (same preset, same SFT checkpoint,
# only --judge / --reward / --seed differ), then every checkpoint is evaluated greedily with the
# exact oracle judge on the same 192 test-ios and 192 test-android tasks (navrl eval --seed 0).
# Arms run P at a time; a finished arm is skipped on rerun (its eval-android/results.json exists).
set -u
D=${D:-runs/judge-study}
P=${P:-1}
SEEDS=${SEEDS:-"0"}
PY=${PY:-python}
# every arm identical except judge / reward / seed. torch_threads=1: arms run side by side;
# eval_episodes=8 only shortens navrl train's own closing evaluation (the study's is navrl eval);
# checkpoint_every=2 keeps a checkpoint every 2 updates (an arm cut short is evaluated at a common update)
COMMON=(--preset demo --init "$D/sft/sft.pt" --set run.torch_threads=1 --set run.eval_episodes=8 --set run.checkpoint_every=2)
mkdir -p "$D/logs"
# Every process on one torch thread (the study shares a 2-core machine): navrl train takes
# run.torch_threads=1 (COMMON); navrl eval takes torch's default, here OMP_NUM_THREADS=1; navrl sft
# sets the preset's torch_threads (2 for demo) and has no --set, so it runs with set_num_threads held at 1.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cli() { $PY -m navrl.cli "$@"; }
cli_one_thread() {
  $PY -c 'import sys, torch; torch.set_num_threads(1); torch.set_num_threads = lambda n: None
from navrl.cli.main import main; sys.exit(main(sys.argv[1:]))' "$@"
}

evaluate() {  # evaluate POLICY OUTDIR
  for s in test-ios test-android; do
    short=${s#test-}
    cli eval --policy "$1" --suite "$s" -n 192 --seed 0 --out "$2/eval-$short" --overwrite
  done
}

if [ ! -f "$D/sft/sft.pt" ]; then
  cli_one_thread sft --preset demo --out "$D/sft" > "$D/logs/sft.log" 2>&1 || { echo "SFT failed"; exit 1; }
fi

arm() {  # arm NAME SEED JUDGE [train args...]
  name=$1 seed=$2 judge=$3; shift 3
  out="$D/$name"
  [ -f "$out/eval-android/results.json" ] && return 0
  {
    echo "=== $name start $(date -u +%T)"
    cli train "${COMMON[@]}" --seed "$seed" --judge "$judge" --out "$out" --overwrite "$@" &&
    echo "=== $name trained $(date -u +%T)" &&
    evaluate "$out" "$out" &&
    echo "=== $name done $(date -u +%T)"
  } > "$D/logs/$name.log" 2>&1
}

jobs_list=()
[ -f "$D/sft/eval-android/results.json" ] || jobs_list+=("sft")
for S in $SEEDS; do
  for E in 0 0.1 0.2 0.3; do
    jobs_list+=("e$(printf %02d "$(echo "$E*100/1" | bc)")_s$S|$S|noisy:step_fp=$E,step_fn=$E,seed=$S|")
  done
  jobs_list+=("lenient_default_s$S|$S|noisy:lenient=0.5,seed=$S|--reward default")
  jobs_list+=("lenient_cautionary_s$S|$S|noisy:lenient=0.5,seed=$S|--reward cautionary")
  # the cautionary reward under the exact judge (e00's judge): separates the reward's own effect
  # on episode length from the lenient judge's
  jobs_list+=("exact_cautionary_s$S|$S|noisy:step_fp=0,step_fn=0,seed=$S|--reward cautionary")
done

for j in "${jobs_list[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$P" ]; do wait -n; done
  if [ "$j" = sft ]; then
    (evaluate "$D/sft/sft.pt" "$D/sft" > "$D/logs/sft-eval.log" 2>&1) &
  else
    IFS='|' read -r name seed judge extra <<< "$j"
    # shellcheck disable=SC2086
    arm "$name" "$seed" "$judge" $extra &
  fi
done
wait
echo "all done $(date -u +%T)"
