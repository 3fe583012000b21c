"""Training-rollout episode lengths of the lenient-judge arms, default vs cautionary reward,
update by update (the same SFT, seed and task draws: update 1's rollouts are identical, the
rewards differ from then on). What the study could measure of the cautionary reward when the
arms could not be trained and evaluated in full.

    python docs/results/judges/lenient_rollouts.py RUNS_DIR [SEED]"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def updates(path: Path) -> dict[int, dict]:
    out = {}
    if path.exists():
        for line in path.open():
            d = json.loads(line)
            if d.get("kind") == "update" and d.get("success") is not None:
                out[d["update"]] = d
    return out


def main() -> int:
    root = Path(sys.argv[1])
    seed = sys.argv[2] if len(sys.argv) > 2 else "0"
    dflt = updates(root / f"lenient_default_s{seed}" / "metrics.jsonl")
    caut = updates(root / f"lenient_cautionary_s{seed}" / "metrics.jsonl")
    common = sorted(set(dflt) & set(caut))
    print("| update | default: length | success | judged-success steps | cautionary: length | success | judged-success steps | cautionary - default length |")
    print("|---|---|---|---|---|---|---|---|")
    diffs = []
    for u in common:
        a, b = dflt[u], caut[u]
        d = b["episode_length"] - a["episode_length"]
        if u > 1:
            diffs.append(d)
        print(f"| {u} | {a['episode_length']:.2f} | {100 * a['success']:.1f}% | {a['verdicts'].get('success', 0)} | "
              f"{b['episode_length']:.2f} | {100 * b['success']:.1f}% | {b['verdicts'].get('success', 0)} | {d:+.2f} |")
    print(f"\nupdates reached: default {max(dflt, default=0)}, cautionary {max(caut, default=0)}")
    if len(diffs) >= 2:
        m = sum(diffs) / len(diffs)
        sd = math.sqrt(sum((x - m) ** 2 for x in diffs) / (len(diffs) - 1))
        tq = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}.get(len(diffs) - 1, 2.0)
        h = tq * sd / math.sqrt(len(diffs))
        print(f"mean difference over updates 2..{common[-1]}: {m:+.2f} steps, 95% t-interval {m - h:+.2f} to {m + h:+.2f} "
              f"({len(diffs)} updates)")
    else:
        print(f"fewer than 2 updates after the first in common ({len(diffs)}): no interval")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
