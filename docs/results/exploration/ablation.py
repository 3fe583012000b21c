"""The ablation of issue 26's from-the-start recipe: the final setting and, for each mechanism,
the same run with it off; every run's reduce.json (``reduce.py``, same seed, SFT checkpoint and
fixed tasks). Prints the table (tasks finished from the start and from 3 steps before the end,
train and validation, each ablated run paired with the final one on the same tasks) and draws
the per-update diagnostics' curves.

    python docs/results/exploration/ablation.py final=runs/abl/final/reduce.json \\
        "no KL=runs/abl/nokl/reduce.json" ... [--png docs/results/exploration/ablation_curves.png] [--md OUT.md] \\
        [--history "no KL=runs/abl/nokl/metrics.jsonl"]

The first run named is the reference every other is paired with.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from navrl.eval.intervals import wilson_interval

sys.path.insert(0, str(Path(__file__).parent))
from compare import compare  # noqa: E402

CURVES = (  # (title, function of one history row -> float | None)
    ("success of episodes from the start (training, mean of 10)", lambda r: r.get("start_success")),
    ("success of guided (handed-over) episodes", lambda r: r.get("guided_success")),
    ("entropy of the kind factor (nats)", lambda r: (r.get("diag") or {}).get("entropy", {}).get("kind")),
    ("entropy of the node factor (nats)", lambda r: (r.get("diag") or {}).get("entropy", {}).get("node")),
    ("entropy of the text factor (nats)", lambda r: (r.get("diag") or {}).get("entropy", {}).get("text")),
    ("share of groups with zero outcome variance", lambda r: (r.get("diag") or {}).get("zero_variance_groups")),
    ("share of zero-advantage steps", lambda r: (r.get("diag") or {}).get("zero_advantage_steps")),
    ("curriculum: mean hand-over point (steps before the end)",
     lambda r: _mean(list(r["curriculum/handover_k"].values())) if isinstance(r.get("curriculum/handover_k"), dict)
     and r["curriculum/handover_k"] else None),
)
SMOOTH = {0: 10, 1: 10}   # curves smoothed over this many updates (the others: 5)


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if isinstance(x, (int, float)) and x == x]
    return sum(xs) / len(xs) if xs else None


def rows(runs: dict[str, dict]) -> list[dict]:
    """One row per run and split/k: finished tasks, and (for all but the first run) the paired
    difference from the first run on the same tasks (``compare.py``'s pairing)."""
    names = list(runs)
    ref = runs[names[0]]
    out = []
    for name in names:
        for key, c in compare(runs[name], ref).items():
            split, k = key.split("/")
            row = {"run": name, "split": split, "k": int(k), "n": c["n"], "done": c["a"],
                   "per_template": {tp: [a, n] for tp, (a, _, n) in c["per_template"].items()}}
            if name != names[0]:
                row["vs_ref"] = c["diff_ci"]
            out.append(row)
    return out


def markdown(runs: dict[str, dict], table: list[dict]) -> str:
    names = list(runs)
    by = {(r["run"], r["split"], r["k"]): r for r in table}

    def cell(name: str, split: str, k: int) -> str:
        r = by.get((name, split, k))
        if r is None:
            return "-"
        lo, hi = wilson_interval(r["done"], r["n"])
        s = f"{r['done']}/{r['n']} ({100 * r['done'] / r['n']:.0f}%, {100 * lo:.0f}-{100 * hi:.0f})"
        if "vs_ref" in r:
            a, b = r["vs_ref"]
            s += f"; {100 * a:+.0f}..{100 * b:+.0f}"
        return s

    lines = ["| run | from the start, train | from the start, val | last 3, train | last 3, val |",
             "|---|---|---|---|---|"]
    for n in names:
        lines.append(f"| {n} | {cell(n, 'train', 0)} | {cell(n, 'val', 0)} | {cell(n, 'train', 3)} | "
                     f"{cell(n, 'val', 3)} |")
    tps = sorted({tp for r in table for tp in r["per_template"]})
    lines += ["", "From the start, train / val, per template:", "",
              "| run | " + " | ".join(tps) + " |", "|---|" + "---|" * len(tps)]
    for n in names:
        cells = []
        for tp in tps:
            a = by.get((n, "train", 0), {}).get("per_template", {}).get(tp, [0, 0])
            b = by.get((n, "val", 0), {}).get("per_template", {}).get(tp, [0, 0])
            cells.append(f"{a[0]}/{b[0]}")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(runs: dict[str, dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 4, figsize=(20, 8))
    for i, (title, f) in enumerate(CURVES):
        ax = axes.flat[i]
        w = SMOOTH.get(i, 5)
        for name, r in runs.items():
            h = r.get("history") or []
            pts = [(x["update"], f(x)) for x in h]
            pts = [(u, v) for u, v in pts if isinstance(v, (int, float)) and v == v]
            if not pts:
                continue
            xs = [u for u, _ in pts]
            ys = [v for _, v in pts]
            sm = [sum(ys[max(0, j - w + 1):j + 1]) / len(ys[max(0, j - w + 1):j + 1]) for j in range(len(ys))]
            ax.plot(xs, sm, label=name, lw=2.2 if name == next(iter(runs)) else 1.2)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=80)
    tmp.replace(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="NAME=path/to/reduce.json; the first is the reference")
    p.add_argument("--png", default=None, help="write the diagnostics' curves here")
    p.add_argument("--md", default=None, help="also write the tables here")
    p.add_argument("--history", action="append", default=[],
                   help="NAME=run/metrics.jsonl: the curves of a run evaluated from a checkpoint (reduce.py --resume "
                        "at its last update records no history of its own), read from the training run's metrics")
    a = p.parse_args(argv)
    runs = {}
    for spec in a.runs:
        name, sep, path = spec.partition("=")
        if not sep:
            print(f"ablation.py: expected NAME=PATH, got {spec!r}", file=sys.stderr)
            return 2
        try:
            runs[name] = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            print(f"ablation.py: {path}: {e}", file=sys.stderr)
            return 2
    for spec in a.history:
        name, _, path = spec.partition("=")
        if name not in runs:
            print(f"ablation.py: --history names no run: {name!r}", file=sys.stderr)
            return 2
        try:
            ups = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        except (OSError, ValueError) as e:
            print(f"ablation.py: {path}: {e}", file=sys.stderr)
            return 2
        last = runs[name].get("updates")
        runs[name]["history"] = [{**r, "start_success": r.get("unguided_success")} for r in ups
                                 if r.get("kind") == "update" and (last is None or r["update"] <= last)]
    md = markdown(runs, rows(runs))
    print(md)
    if a.md:
        Path(a.md).write_text(md)
    if a.png:
        plot(runs, Path(a.png))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
