#!/usr/bin/env bash
# Evaluate every arm of run_study.sh at one common update U (when the arms could not finish
# their 30 updates in time): checkpoint update_U of each arm, greedy, exact oracle judge, the
# same 192 test-ios and 192 test-android tasks as the SFT's evaluation (navrl eval --seed 0).
#   D=runs/judge-study U=6 bash docs/results/judges/eval_cut.sh ARM...
# writes $D/cut$U/ARM/eval-{ios,android}; analyze.py $D/cut$U reads them (sft linked in).
set -u
D=${D:-runs/judge-study}
U=${U:?update}
PY=${PY:-python}
C="$D/cut$U"
mkdir -p "$C"
[ -e "$C/sft" ] || ln -s ../sft "$C/sft"
for name in "$@"; do
  ck=$(printf "%s/%s/checkpoints/update_%05d.pt" "$D" "$name" "$U")
  [ -f "$ck" ] || { echo "no $ck"; continue; }
  mkdir -p "$C/$name"
  $PY -c 'import json,sys; [print(l, end="") for l in open(sys.argv[1]) if json.loads(l).get("update", 0) <= int(sys.argv[2])]' \
    "$D/$name/metrics.jsonl" "$U" > "$C/$name/metrics.jsonl"
  for s in ios android; do
    $PY -m navrl.cli eval --policy "$ck" --suite "test-$s" -n 192 --seed 0 --out "$C/$name/eval-$s" --overwrite \
      > "$C/$name/eval-$s.log" 2>&1 &
  done
done
wait
