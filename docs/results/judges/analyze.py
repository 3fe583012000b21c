"""Tables, intervals and the curve of issue #30's study from the run directory of run_study.sh.

    PYTHONPATH=src python docs/results/judges/analyze.py RUNS_DIR [OUT_DIR]

Writes OUT_DIR/study.json (every number), OUT_DIR/tables.md (the tables pasted into
docs/results/judges.md) and OUT_DIR/gain_vs_judge_error.png. OUT_DIR defaults to the folder of
this script. Arms not finished (no eval-android/results.json) are listed as missing."""
from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

from navrl.eval import paired_gain_interval
from navrl.eval.result import summarize
from navrl.rollout.storage import load_trajectories

SUITES = ("test-ios", "test-android")
RATES = (0.0, 0.1, 0.2, 0.3)


def load(run: Path) -> dict | None:
    out = {}
    for s in SUITES:
        d = run / f"eval-{s.removeprefix('test-')}"
        if not (d / "results.json").exists():
            return None
        out[s] = summarize(s, load_trajectories(d))
    return out


def by_task(res, attr):
    return {t.task.get("id"): (float(t.success) if attr == "success" else float(t.length))
            for t in res.trajectories if t.valid}


def t_interval(diffs: list[float]) -> tuple[float, float, float]:
    n = len(diffs)
    m = sum(diffs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in diffs) / (n - 1)) if n > 1 else 0.0
    h = 1.96 * sd / math.sqrt(n)   # n = 192 or 384: t quantile ~ 1.97, normal 1.96
    return m, m - h, m + h


def bootstrap(diffs: list[float], reps: int = 10000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return means[int(0.025 * reps)], means[int(0.975 * reps) - 1]


def paired(a: dict, b: dict) -> list[float]:
    ids = sorted(set(a) & set(b))
    return [a[i] - b[i] for i in ids]


def main() -> int:
    root = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent
    sft = load(root / "sft")
    if sft is None:
        print("SFT not evaluated yet")
        return 1
    study = {"sft": {s: {"success": r.success_rate, "successes": r.successes, "n": r.n,
                         "mean_length": r.mean_length} for s, r in sft.items()},
             "noise": [], "lenient": {}, "missing": []}
    arms = {}
    for run in sorted(p for p in root.iterdir() if p.is_dir() and p.name not in ("sft", "logs")):
        r = load(run)
        if r is None:
            study["missing"].append(run.name)
        else:
            arms[run.name] = r
    lines = ["| step_fp = step_fn | RL seed | test-ios RL - SFT (points) | 95% CI | test-android RL - SFT (points) | 95% CI |",
             "|---|---|---|---|---|---|"]
    seeds = sorted({int(n.rsplit("_s", 1)[1]) for n in arms if n.startswith("e")})
    curve = {}
    for e in RATES:
        per_seed = []
        for sd in seeds:
            name = f"e{round(100 * e):02d}_s{sd}"
            if name not in arms:
                continue
            row = {"rate": e, "seed": sd, "arm": name}
            cells = []
            for s in SUITES:
                a, b = arms[name][s], sft[s]
                lo, hi, n = paired_gain_interval(a, b)
                g = 100 * (a.success_rate - b.success_rate)
                row[s] = {"rl": a.success_rate, "successes": a.successes, "gain_points": g,
                          "ci_points": [100 * lo, 100 * hi], "paired_tasks": n, "mean_length": a.mean_length}
                cells += [f"{g:+.1f} ({a.successes}/{a.n} vs {b.successes}/{b.n})", f"{100 * lo:+.1f} to {100 * hi:+.1f}"]
            lines.append(f"| {e:.1f} | {sd} | " + " | ".join(cells) + " |")
            study["noise"].append(row)
            per_seed.append(name)
        if len(per_seed) > 1:   # mean over seeds: bootstrap over tasks of the seed-mean paired difference
            cells = []
            for s in SUITES:
                base = by_task(sft[s], "success")
                runs = [by_task(arms[n][s], "success") for n in per_seed]
                ids = sorted(set(base).intersection(*runs))
                diffs = [sum(r[i] for r in runs) / len(runs) - base[i] for i in ids]
                m = 100 * sum(diffs) / len(diffs)
                lo, hi = bootstrap(diffs)
                curve.setdefault(s, {})[e] = (m, 100 * lo, 100 * hi)
                cells += [f"**{m:+.1f}**", f"{100 * lo:+.1f} to {100 * hi:+.1f} (bootstrap)"]
            lines.append(f"| {e:.1f} | mean of {len(per_seed)} | " + " | ".join(cells) + " |")
            study.setdefault("noise_mean", []).append({"rate": e, "arms": per_seed, **{s: curve[s][e] for s in SUITES}})
    noise_table = "\n".join(lines)

    # cautionary vs default reward under the lenient judge: mean episode length, paired by task
    len_lines = ["| RL seed | suite | mean length: default | cautionary | SFT | cautionary - default (steps) | 95% t-interval | 95% bootstrap | success: default | cautionary | cautionary - default (points, paired 95% CI) |",
                 "|---|---|---|---|---|---|---|---|---|---|---|"]
    for sd in sorted({int(n.rsplit("_s", 1)[1]) for n in arms if n.startswith("lenient_")}):
        dn, cn = f"lenient_default_s{sd}", f"lenient_cautionary_s{sd}"
        if dn not in arms or cn not in arms:
            continue
        pooled = []
        for s in SUITES + ("both",):
            if s == "both":
                diffs = pooled
                dl = sum(arms[dn][x].mean_length * arms[dn][x].n for x in SUITES) / sum(arms[dn][x].n for x in SUITES)
                cl = sum(arms[cn][x].mean_length * arms[cn][x].n for x in SUITES) / sum(arms[cn][x].n for x in SUITES)
                sl = sum(sft[x].mean_length * sft[x].n for x in SUITES) / sum(sft[x].n for x in SUITES)
                succ = ["", "", ""]
            else:
                diffs = paired(by_task(arms[cn][s], "length"), by_task(arms[dn][s], "length"))
                pooled += diffs
                dl, cl, sl = arms[dn][s].mean_length, arms[cn][s].mean_length, sft[s].mean_length
                lo, hi, _ = paired_gain_interval(arms[cn][s], arms[dn][s])
                ds, cs = arms[dn][s].success_rate, arms[cn][s].success_rate
                succ = [f"{100 * ds:.1f}%", f"{100 * cs:.1f}%", f"{100 * (cs - ds):+.1f} ({100 * lo:+.1f} to {100 * hi:+.1f})"]
            m, tlo, thi = t_interval(diffs)
            blo, bhi = bootstrap(diffs)
            study["lenient"][f"s{sd}/{s}"] = {"default_len": dl, "cautionary_len": cl, "sft_len": sl, "diff": m,
                                              "t_ci": [tlo, thi], "boot_ci": [blo, bhi], "n": len(diffs),
                                              "success": succ}
            len_lines.append(f"| {sd} | {s} ({len(diffs)} tasks) | {dl:.2f} | {cl:.2f} | {sl:.2f} | **{m:+.2f}** | "
                             f"{tlo:+.2f} to {thi:+.2f} | {blo:+.2f} to {bhi:+.2f} | " + " | ".join(succ) + " |")
    len_table = "\n".join(len_lines)

    # the rollouts' own view (what the judges said during training): last 10 updates
    train_lines = ["| arm | judged success, last 10 updates | rollout length, last 10 updates |", "|---|---|---|"]
    for name in sorted(arms):
        f = root / name / "metrics.jsonl"
        if not f.exists():
            continue
        ups = [json.loads(l) for l in f.open() if '"kind": "update"' in l]
        ups = [u for u in ups if u.get("success") is not None][-10:]
        if ups:
            js = sum(u["success"] for u in ups) / len(ups)
            ln = sum(u["episode_length"] for u in ups) / len(ups)
            train_lines.append(f"| {name} | {100 * js:.1f}% | {ln:.2f} |")
    train_table = "\n".join(train_lines)

    (out / "study.json").write_text(json.dumps(study, indent=2) + "\n")
    (out / "tables.md").write_text(
        f"SFT: test-ios {sft['test-ios'].successes}/{sft['test-ios'].n}, test-android "
        f"{sft['test-android'].successes}/{sft['test-android'].n}\n\n{noise_table}\n\n{len_table}\n\n{train_table}\n"
        f"\nmissing: {study['missing']}\n")
    print((out / "tables.md").read_text())

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, s in zip(axes, SUITES):
        for k, sd in enumerate(seeds):
            pts = [r for r in study["noise"] if r["seed"] == sd]
            xs = [r["rate"] + 0.006 * (k - (len(seeds) - 1) / 2) for r in pts]
            ys = [r[s]["gain_points"] for r in pts]
            err = [[y - r[s]["ci_points"][0] for y, r in zip(ys, pts)], [r[s]["ci_points"][1] - y for y, r in zip(ys, pts)]]
            ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=3, alpha=0.8 if len(seeds) > 1 else 1, label=f"RL seed {sd}")
        if s in curve:
            es = sorted(curve[s])
            ax.plot(es, [curve[s][e][0] for e in es], "k--", lw=1.5, label="mean of seeds")
        ax.axhline(0, color="grey", lw=1)
        ax.set_title(f"{s}: RL - SFT (paired 95% CI)")
        ax.set_xlabel("step judge error rate (step_fp = step_fn)")
        ax.set_xticks(RATES)
    axes[0].set_ylabel("success gain over SFT (points)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "gain_vs_judge_error.png", dpi=110)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
