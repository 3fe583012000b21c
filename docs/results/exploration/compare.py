"""Paired comparison of two reduce.py runs on the same fixed tasks (after RL): for each split
and hand-over step, A's and B's finished tasks, A - B with Newcombe's paired 95% interval,
and per template. Usage: python compare.py A/reduce.json B/reduce.json [--names A B]."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from navrl.eval.intervals import paired_counts, paired_difference_interval


def compare(a: dict, b: dict) -> dict:
    """{"split/k": {"a", "b", "n", "diff_ci", "per_template": {tp: [a, b, n]}}} over the tasks both ran."""
    out = {}
    for split, by_k in a["after"].items():
        for k, fa in by_k.items():
            fb = b["after"][split][k]
            ids = sorted(set(fa) & set(fb))
            cnt = paired_counts({i: fa[i] for i in ids}, {i: fb[i] for i in ids})
            lo, hi = paired_difference_interval(*cnt)
            per: dict = {}
            for i in ids:
                row = per.setdefault(i.split(":")[1], [0, 0, 0])
                row[0] += fa[i]
                row[1] += fb[i]
                row[2] += 1
            out[f"{split}/{k}"] = {"a": sum(fa[i] for i in ids), "b": sum(fb[i] for i in ids), "n": len(ids),
                                   "diff_ci": [lo, hi], "per_template": per}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--names", nargs=2, default=["A", "B"])
    args = p.parse_args(argv)
    try:
        a, b = (json.loads(Path(x).read_text()) for x in (args.a, args.b))
    except (OSError, ValueError) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    na, nb = args.names
    for key, r in compare(a, b).items():
        split, k = key.split("/")
        lo, hi = r["diff_ci"]
        where = "from the start" if k == "0" else f"last {k}"
        print(f"{split:5s} {where:>14s}: {na} {r['a']}/{r['n']}  {nb} {r['b']}/{r['n']}  "
              f"{na} - {nb} {100 * lo:+.0f} to {100 * hi:+.0f} points")
        print("      " + ", ".join(f"{tp} {x}/{y}/{n}" for tp, (x, y, n) in sorted(r["per_template"].items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
