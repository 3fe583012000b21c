"""Paired comparison of `navrl eval --suite val` runs (docs/results/exploration.md, "The whole
train suite (validation)"): success overall and per group (task family, single-/multi-app) for
every run, the paired 95% interval (Newcombe) of each run minus a baseline on the same tasks.

    PYTHONPATH=src python docs/results/exploration/wholesuite.py runs/ws/eval-sft runs/ws/eval-A ... \
        [--names SFT,A,...] [--vs 0,1] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from navrl.eval.intervals import paired_difference_interval, wilson_interval
from navrl.rollout.storage import load_trajectories


def outcomes(d: str) -> dict[str, dict]:
    out = {}
    for t in load_trajectories(Path(d) / "trajectories.jsonl"):
        if t.valid:
            out[t.task["id"]] = {"ok": bool(t.success), "family": str(t.task.get("family", "?")),
                                 "apps": "multi-app" if len(t.task.get("apps", [])) > 1 else "single-app",
                                 "template": str(t.task.get("template", "?"))}
    return out


def paired(after: dict, before: dict, ids) -> tuple[float, float, float]:
    a = sum(after[i]["ok"] and before[i]["ok"] for i in ids)
    b = sum(after[i]["ok"] and not before[i]["ok"] for i in ids)
    c = sum(not after[i]["ok"] and before[i]["ok"] for i in ids)
    d = len(ids) - a - b - c
    lo, hi = paired_difference_interval(a, b, c, d)
    return 100 * (b - c) / max(1, len(ids)), 100 * lo, 100 * hi


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--names")
    ap.add_argument("--vs", default="0", help="indices of the baselines, comma separated")
    ap.add_argument("--json")
    a = ap.parse_args()
    names = a.names.split(",") if a.names else [Path(r).name for r in a.runs]
    res = [outcomes(r) for r in a.runs]
    ids = sorted(set.intersection(*(set(r) for r in res)))
    groups: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        t = res[0][i]
        groups["all"].append(i)
        groups[t["apps"]].append(i)
        groups[f"family {t['family']}"].append(i)
    order = ["all", "single-app", "multi-app"] + sorted(g for g in groups if g.startswith("family"))
    vs = [int(x) for x in a.vs.split(",")]
    report = {"tasks": len(ids), "runs": names, "groups": {}}
    head = "| group | n | " + " | ".join(names) + " | " + " | ".join(
        f"{names[j]} - {names[v]}" for v in vs for j in range(len(names)) if j != v and j > v) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for g in order:
        gi = groups[g]
        cells, row = [], {"n": len(gi)}
        for n, r in zip(names, res):
            k = sum(r[i]["ok"] for i in gi)
            lo, hi = wilson_interval(k, len(gi))
            cells.append(f"{k} ({100 * k / len(gi):.1f}%)")
            row[n] = {"successes": k, "wilson": [lo, hi]}
        diffs = []
        for v in vs:
            for j in range(len(names)):
                if j != v and j > v:
                    d, lo, hi = paired(res[j], res[v], gi)
                    diffs.append(f"{d:+.1f} ({lo:+.1f}..{hi:+.1f})")
                    row[f"{names[j]}-{names[v]}"] = [d, lo, hi]
        print(f"| {g} | {len(gi)} | " + " | ".join(cells) + " | " + " | ".join(diffs) + " |")
        report["groups"][g] = row
    per_t: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        if res[0][i]["apps"] == "multi-app":
            per_t[res[0][i]["template"]].append(i)
    print("\nmulti-app per template: " + "; ".join(
        f"{t} " + "/".join(str(sum(r[i]["ok"] for i in v)) for r in res) + f" of {len(v)}" for t, v in sorted(per_t.items())))
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
