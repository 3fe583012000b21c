"""What the lenient judge could pay for, and what each reward made of it: issue #30's account of
the cautionary vs default reward, from the run directory of run_study.sh.

    PYTHONPATH=src python docs/results/judges/lenient_account.py RUNS_DIR [OUT_DIR]

Two views, per RL seed and pooled:
- the oracle evaluations (greedy, the same 192 + 192 tasks): per episode, its length, how it
  ended (declared complete and right / declared complete and wrong / step budget), its failed,
  overcomplete and *plausible* failed steps — a failed step whose after-screen is one the
  episode had already seen and is not the screen it left (``navrl.judge.noisy.looks_plausible``:
  back and forth, re-opening a screen), the only steps ``noisy:lenient=0.5`` turns into
  ``success`` half the time;
- the training rollouts (metrics.jsonl, 16 tasks x 8 rollouts at T 0.7 per update, judged by
  the lenient judge): episode length and success update by update, cautionary - default paired
  by update (same seed: the same task draws), updates 2-30 (update 1 is the same policy).
Writes OUT_DIR/lenient_account.json and lenient_account.md (default OUT_DIR: this folder)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

SUITES = ("ios", "android")
ARMS = ("default", "cautionary")


def episodes(path: Path) -> list[dict]:
    out = []
    for line in path.open():
        d = json.loads(line)
        if not d.get("valid", True):
            continue
        steps = d["steps"]
        dev = [s for s in steps if s.get("kind") != "complete"]
        hashes = [s["screen_hash"] for s in steps]
        plausible = 0
        for i, s in enumerate(steps[:-1]):   # the after-screen of step i is step i+1's screen
            if s.get("verdict") == "fail" and hashes[i + 1] != hashes[i] and hashes[i + 1] in hashes[:i + 1]:
                plausible += 1
        out.append({"id": d["task"]["id"], "length": len(steps), "success": bool(d["success"]),
                    "end": d["end"], "false_complete": d["end"] == "complete" and not d["success"],
                    "budget": d["end"] == "budget",
                    "fail": sum(s.get("verdict") == "fail" for s in dev),
                    "overcomplete": sum(s.get("verdict") == "overcomplete" for s in dev),
                    "plausible": plausible})
    return out


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def t_interval(d: list[float], q: float | None = None) -> tuple[float, float, float]:
    n = len(d)
    m = mean(d)
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1)) if n > 1 else 0.0
    q = q or (2.05 if n < 40 else 1.96)   # 28 updates: t(27) 2.05; 192+ tasks: 1.96
    h = q * sd / math.sqrt(n)
    return m, m - h, m + h


def updates(path: Path) -> dict[int, dict]:
    out = {}
    for line in path.open():
        d = json.loads(line)
        if d.get("kind") == "update" and d.get("success") is not None:
            out[d["update"]] = d
    return out


PAIRS = (("lenient", "lenient_cautionary_s", "lenient_default_s"),   # the question
         ("exact", "exact_cautionary_s", "e00_s"))                     # the control: the reward alone
KEYS = ("length", "success", "budget", "false_complete", "fail", "overcomplete", "plausible")


def arm_episodes(root: Path, name: str) -> list[dict] | None:
    d = root / name
    if not all((d / f"eval-{su}" / "trajectories.jsonl").exists() for su in SUITES):
        return None
    return [e for su in SUITES for e in episodes(d / f"eval-{su}" / "trajectories.jsonl")]


def main() -> int:
    root = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent
    res: dict = {"eval": {}, "diff": {}, "rollouts": {}}
    head = ["| judge | RL seed | reward | episodes | mean length | success | ended at the step budget | declared complete, wrong | failed steps / episode | overcomplete steps / episode | plausible failed steps / episode (what lenient=0.5 pays half of) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    sft = arm_episodes(root, "sft")
    r = {k: mean(float(e[k]) for e in sft) for k in KEYS}
    res["eval"]["sft"] = r
    lines = head + [(f"| - | - | SFT (warm start) | {len(sft)} | {r['length']:.2f} | {100 * r['success']:.1f}% | "
                     f"{100 * r['budget']:.1f}% | {100 * r['false_complete']:.1f}% | {r['fail']:.2f} | "
                     f"{r['overcomplete']:.3f} | {r['plausible']:.3f} |")]
    diff_lines = ["| judge | RL seed | cautionary - default, paired by task (95% t-interval) | length | plausible failed steps | failed steps | overcomplete steps | budget-ended episodes (points) | declared complete, wrong (points) |",
                  "|---|---|---|---|---|---|---|---|---|"]
    roll_lines = ["| judge | RL seed | training rollouts, updates 2-30 | default: length | cautionary: length | cautionary - default (95% t over updates) | default: success | cautionary: success | default: judged-success steps / update | cautionary |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
    for judge, cpre, dpre in PAIRS:
        seeds = sorted(int(p.name.rsplit("_s", 1)[1]) for p in root.glob(f"{cpre}*"))
        eps = {(arm, sd): arm_episodes(root, f"{pre}{sd}") for sd in seeds
               for arm, pre in (("default", dpre), ("cautionary", cpre))}
        seeds = [sd for sd in seeds if eps[("default", sd)] and eps[("cautionary", sd)]]
        for sd in seeds:
            for arm in ARMS:
                r = {k: mean(float(e[k]) for e in eps[(arm, sd)]) for k in KEYS}
                res["eval"][f"{judge}/{sd}/{arm}"] = r
                lines.append(f"| {judge} | {sd} | {arm} | {len(eps[(arm, sd)])} | {r['length']:.2f} | {100 * r['success']:.1f}% | "
                             f"{100 * r['budget']:.1f}% | {100 * r['false_complete']:.1f}% | {r['fail']:.2f} | "
                             f"{r['overcomplete']:.3f} | {r['plausible']:.3f} |")
        # per task: cautionary - default, the mean over the seeds of a group (pooled: both)
        for label, group in [(str(sd), [sd]) for sd in seeds] + ([("pooled", seeds)] if len(seeds) > 1 else []):
            for sd in group:   # the same tasks in the same order in every evaluation
                assert [e["id"] for e in eps[("default", sd)]] == [e["id"] for e in sft] == [e["id"] for e in eps[("cautionary", sd)]]
            cells = []
            for k in ("length", "plausible", "fail", "overcomplete", "budget", "false_complete"):
                diffs = [mean(float(eps[("cautionary", sd)][i][k]) - float(eps[("default", sd)][i][k]) for sd in group)
                         for i in range(len(sft))]
                m, lo, hi = t_interval(diffs)
                f = 100 if k in ("budget", "false_complete") else 1
                cells.append(f"{f * m:+.2f} ({f * lo:+.2f} to {f * hi:+.2f})")
                res["diff"][f"{judge}/{label}/{k}"] = [m, lo, hi]
            diff_lines.append(f"| {judge} | {label} | {len(sft)} tasks | " + " | ".join(cells) + " |")
        pooled: list[float] = []
        for sd in seeds:
            a = updates(root / f"{dpre}{sd}" / "metrics.jsonl")
            b = updates(root / f"{cpre}{sd}" / "metrics.jsonl")
            common = sorted(u for u in set(a) & set(b) if u > 1)
            diffs = [b[u]["episode_length"] - a[u]["episode_length"] for u in common]
            pooled += diffs
            m, lo, hi = t_interval(diffs)
            r = {"updates": len(common), "default_len": mean(a[u]["episode_length"] for u in common),
                 "cautionary_len": mean(b[u]["episode_length"] for u in common), "diff": [m, lo, hi],
                 "default_success": mean(a[u]["success"] for u in common),
                 "cautionary_success": mean(b[u]["success"] for u in common),
                 "default_judged_success": mean(a[u]["verdicts"].get("success", 0) for u in common),
                 "cautionary_judged_success": mean(b[u]["verdicts"].get("success", 0) for u in common)}
            res["rollouts"][f"{judge}/{sd}"] = r
            roll_lines.append(f"| {judge} | {sd} | {len(common)} updates | {r['default_len']:.2f} | {r['cautionary_len']:.2f} | "
                              f"{m:+.2f} ({lo:+.2f} to {hi:+.2f}) | {100 * r['default_success']:.1f}% | "
                              f"{100 * r['cautionary_success']:.1f}% | {r['default_judged_success']:.0f} | "
                              f"{r['cautionary_judged_success']:.0f} |")
        if len(seeds) > 1:
            m, lo, hi = t_interval(pooled)
            res["rollouts"][f"{judge}/pooled"] = [m, lo, hi]
            roll_lines.append(f"| {judge} | pooled | {len(pooled)} seed-updates | | | {m:+.2f} ({lo:+.2f} to {hi:+.2f}) | | | | |")
    # does the lenient judge add to the reward's own effect? per task, mean over the seeds of
    # (cautionary - default under the lenient judge) - (cautionary - default under the exact judge)
    inter = ["| difference of differences, paired by task | mean over the seeds (steps) | 95% t-interval |", "|---|---|---|"]
    prefixes = [pre for _, c, d in PAIRS for pre in (c, d)]
    both = sorted(set.intersection(*({int(p.name.rsplit("_s", 1)[1]) for p in root.glob(f"{pre}*")} for pre in prefixes)))
    both = [sd for sd in both if all(arm_episodes(root, f"{pre}{sd}") for pre in prefixes)]
    if both:
        e = {(pre, sd): arm_episodes(root, f"{pre}{sd}") for _, c, d in PAIRS for pre in (c, d) for sd in both}
        (_, lc, ld), (_, xc, xd) = PAIRS
        diffs = [mean((e[(lc, sd)][i]["length"] - e[(ld, sd)][i]["length"]) - (e[(xc, sd)][i]["length"] - e[(xd, sd)][i]["length"])
                      for sd in both) for i in range(len(sft))]
        m, lo, hi = t_interval(diffs)
        res["lenient_minus_exact_length"] = {"seeds": both, "diff": [m, lo, hi]}
        inter.append(f"| lenient judge's (cautionary - default) - exact judge's, seeds {both} | {m:+.2f} | {lo:+.2f} to {hi:+.2f} |")
    text = "\n\n".join("\n".join(t) for t in (lines, diff_lines, inter, roll_lines)) + "\n"
    (out / "lenient_account.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "lenient_account.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
