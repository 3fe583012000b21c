"""Two runs of `navrl experiment miniwob` (their results.json) compared on the same instances:
per method the mean of each, the paired difference with its 95% interval and the instances won
and lost; then a per-task table (the newer run's Wilson intervals) in Markdown.

    PYTHONPATH=src python docs/results/miniwob/all/compare.py NEW.json OLD.json [--names new old]
"""
from __future__ import annotations

import argparse
import json

from navrl.eval.intervals import paired_counts, paired_difference_interval

LABELS = {"bc": "BC", "bc_rl": "BC + RL", "rl": "RL only"}


def flat(run: dict, method: str) -> dict[str, bool]:
    return {k: v for task in run["outcomes"].get(method, {}).values() for k, v in task.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new")
    ap.add_argument("old")
    ap.add_argument("--names", nargs=2, default=None, help="column names of the two runs (default: their commits)")
    a = ap.parse_args()
    new, old = (json.load(open(p)) for p in (a.new, a.old))
    names = a.names or [r["commit"][:7] for r in (new, old)]
    methods = [m for m in LABELS if new["outcomes"].get(m) and old["outcomes"].get(m)]
    for m in methods:
        x, y = flat(new, m), flat(old, m)
        n11, n10, n01, n00 = paired_counts(x, y)
        n = n11 + n10 + n01 + n00
        lo, hi = paired_difference_interval(n11, n10, n01, n00)
        mx, my = sum(x.values()) / len(x), sum(y.values()) / len(y)
        print(f"{LABELS[m]}: {names[0]} {100 * mx:.1f}% vs {names[1]} {100 * my:.1f}%; paired over {n} instances "
              f"{100 * (n10 - n01) / n:+.1f} points ({100 * lo:+.1f} to {100 * hi:+.1f}), {n10} won / {n01} lost")
    rows = {(r["method"], r["task"]): r for r in new["rows"]}
    old_rows = {(r["method"], r["task"]): r for r in old["rows"]}
    tasks = sorted({t for (_, t) in rows})
    head = ["task"] + [f"{LABELS[m]} {n}" for m in methods for n in (names[1], names[0])]
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for t in tasks:
        cells = [t]
        for m in methods:
            o, r = old_rows.get((m, t)), rows.get((m, t))
            cells.append("" if o is None else f"{100 * o['success']:.0f}")
            cells.append("" if r is None else f"**{100 * r['success']:.0f}** [{100 * r['ci_low']:.0f}-{100 * r['ci_high']:.0f}]")
        print("| " + " | ".join(cells) + " |")
    for m in methods:
        s = [r["success"] for (mm, _), r in rows.items() if mm == m]
        print(f"\n{LABELS[m]} ({names[0]}): {sum(v >= 0.8 for v in s)} tasks >= 80%, {sum(v == 0 for v in s)} at 0, "
              f"mean of tasks {100 * sum(s) / len(s):.1f}%", end="")
    print()


if __name__ == "__main__":
    main()
