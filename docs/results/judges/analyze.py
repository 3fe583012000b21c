"""Tables, intervals and the curve of issue #30's study from the run directory of run_study.sh.

    PYTHONPATH=src python docs/results/judges/analyze.py RUNS_DIR [OUT_DIR]

Writes OUT_DIR/study.json (every number), OUT_DIR/tables.md (the tables pasted into
docs/results/judges.md: RL - SFT per error rate and seed, and their mean over seeds; RL(E) - RL(0);
cautionary - default length and success under the lenient judge and, the control, under the
exact judge; what the judges said during training) and OUT_DIR/gain_vs_judge_error.png. OUT_DIR defaults to the folder of
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


def main() -> int:
    root = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent
    sft = load(root / "sft")
    if sft is None:
        print("SFT not evaluated yet")
        return 1
    study = {"sft": {s: {"success": r.success_rate, "successes": r.successes, "n": r.n,
                         "mean_length": r.mean_length} for s, r in sft.items()},
             "noise": [], "lenient": {}, "exact_reward": {}, "missing": []}
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

    # does the error rate itself matter? RL(E) - RL(0), paired by task, mean over the seeds
    drop = ["| step_fp = step_fn | test-ios RL(E) - RL(0) (points, mean of seeds) | 95% CI (bootstrap) | test-android RL(E) - RL(0) | 95% CI (bootstrap) |",
            "|---|---|---|---|---|"]
    for e in RATES[1:]:
        cells = []
        for s in SUITES:
            names = [(f"e{round(100 * e):02d}_s{sd}", f"e00_s{sd}") for sd in seeds]
            names = [(a, b) for a, b in names if a in arms and b in arms]
            if not names:
                break
            runs = [(by_task(arms[a][s], "success"), by_task(arms[b][s], "success")) for a, b in names]
            ids = sorted(set.intersection(*(set(x) & set(y) for x, y in runs)))
            diffs = [sum(x[i] - y[i] for x, y in runs) / len(runs) for i in ids]
            m = 100 * sum(diffs) / len(diffs)
            lo, hi = bootstrap(diffs)
            cells += [f"{m:+.1f}", f"{100 * lo:+.1f} to {100 * hi:+.1f}"]
            study.setdefault("vs_exact", {}).setdefault(s, {})[e] = [m, 100 * lo, 100 * hi, len(names)]
        if cells:
            drop.append(f"| {e:.1f} | " + " | ".join(cells) + " |")
    drop_table = "\n".join(drop)

    # cautionary vs default reward, paired by task: under the lenient judge (the question) and
    # under the exact judge (the control: the reward's own effect)
    len_lines = ["| judge | RL seed | suite | mean length: default | cautionary | SFT | cautionary - default (steps) | 95% t-interval | 95% bootstrap | success: default | cautionary | cautionary - default (points, 95% CI) |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for judge, cpre, dpre in (("lenient", "lenient_cautionary_s", "lenient_default_s"),
                              ("exact", "exact_cautionary_s", "e00_s")):
        sds = sorted(int(n.rsplit("_s", 1)[1]) for n in arms if n.startswith(cpre))
        sds = [sd for sd in sds if f"{dpre}{sd}" in arms]
        groups = [(str(sd), [sd]) for sd in sds] + ([("pooled", sds)] if len(sds) > 1 else [])
        for label, group in groups:
            for s in SUITES + ("both",):
                suites = SUITES if s == "both" else (s,)
                # per task (and suite): the mean over the group's seeds of cautionary - default
                diffs, sdiffs = [], []
                for x in suites:
                    cl = [by_task(arms[f"{cpre}{sd}"][x], "length") for sd in group]
                    dl = [by_task(arms[f"{dpre}{sd}"][x], "length") for sd in group]
                    cs = [by_task(arms[f"{cpre}{sd}"][x], "success") for sd in group]
                    ds = [by_task(arms[f"{dpre}{sd}"][x], "success") for sd in group]
                    ids = sorted(set.intersection(*(set(m) for m in cl + dl)))
                    diffs += [sum(c[i] - d[i] for c, d in zip(cl, dl)) / len(group) for i in ids]
                    sdiffs += [sum(c[i] - d[i] for c, d in zip(cs, ds)) / len(group) for i in ids]

                def avg(prefix, key, suites=suites, group=group):
                    rs = [arms[f"{prefix}{sd}"][x] for sd in group for x in suites]
                    return sum(getattr(r, key) * r.n for r in rs) / sum(r.n for r in rs)
                dl_, cl_ = avg(dpre, "mean_length"), avg(cpre, "mean_length")
                sl = sum(sft[x].mean_length * sft[x].n for x in suites) / sum(sft[x].n for x in suites)
                ds_, cs_ = avg(dpre, "success_rate"), avg(cpre, "success_rate")
                m, tlo, thi = t_interval(diffs)
                blo, bhi = bootstrap(diffs)
                sm = 100 * sum(sdiffs) / len(sdiffs)
                if len(group) == 1 and s != "both":
                    lo, hi, _ = paired_gain_interval(arms[f"{cpre}{group[0]}"][s], arms[f"{dpre}{group[0]}"][s])
                    slo, shi, how = 100 * lo, 100 * hi, "paired"
                else:
                    slo, shi = (100 * v for v in bootstrap(sdiffs))
                    how = "bootstrap"
                study["lenient" if judge == "lenient" else "exact_reward"][f"{label}/{s}"] = {
                    "default_len": dl_, "cautionary_len": cl_, "sft_len": sl, "diff": m, "t_ci": [tlo, thi],
                    "boot_ci": [blo, bhi], "n": len(diffs), "default_success": ds_, "cautionary_success": cs_,
                    "success_diff_points": [sm, slo, shi], "seeds": group}
                len_lines.append(f"| {judge} | {label} | {s} ({len(diffs)} tasks) | {dl_:.2f} | {cl_:.2f} | {sl:.2f} | **{m:+.2f}** | "
                                 f"{tlo:+.2f} to {thi:+.2f} | {blo:+.2f} to {bhi:+.2f} | {100 * ds_:.1f}% | {100 * cs_:.1f}% | "
                                 f"{sm:+.1f} ({slo:+.1f} to {shi:+.1f}, {how}) |")
    len_table = "\n".join(len_lines)

    # the rollouts' own view (what the judges said during training): last 10 updates
    train_lines = [("| arm | rollout success (exact terminal verdict), last 10 updates | rollout length, last 10 updates | "
                    "step verdicts the judge called success, all updates |"), "|---|---|---|---|"]
    for name in sorted(arms):
        f = root / name / "metrics.jsonl"
        if not f.exists():
            continue
        ups = [json.loads(l) for l in f.open() if '"kind": "update"' in l]
        ups = [u for u in ups if u.get("success") is not None]
        said = sum(u["verdicts"].get("success", 0) for u in ups)
        steps = sum(u["verdicts"].get(v, 0) for u in ups for v in ("success", "fail", "overcomplete"))
        ups = ups[-10:]
        if ups:
            js = sum(u["success"] for u in ups) / len(ups)
            ln = sum(u["episode_length"] for u in ups) / len(ups)
            train_lines.append(f"| {name} | {100 * js:.1f}% | {ln:.2f} | {said}/{steps} ({100 * said / max(steps, 1):.1f}%) |")
    train_table = "\n".join(train_lines)

    (out / "study.json").write_text(json.dumps(study, indent=2) + "\n")
    (out / "tables.md").write_text(
        f"SFT: test-ios {sft['test-ios'].successes}/{sft['test-ios'].n}, test-android "
        f"{sft['test-android'].successes}/{sft['test-android'].n}\n\n{noise_table}\n\n{drop_table}\n\n{len_table}\n\n{train_table}\n"
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
            ax.fill_between(es, [curve[s][e][1] for e in es], [curve[s][e][2] for e in es], color="grey", alpha=0.2,
                            label="mean of seeds: 95% CI (bootstrap)")
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
