"""``navrl experiment paper-table``: the transcript's results table, re-run on the phone world.

SFT once; then, from the same SFT checkpoint and seed, each method trains for the same
number of updates and is evaluated at fixed update counts on the test suites. Writes
``results.md`` (rows = methods and checkpoints, columns = suites, 95% intervals),
``results.csv`` and plots of success and episode length vs updates.
"""
from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from navrl.agent.policy.base import greedy
from navrl.experiments.common import load_config_file
from navrl.provenance import git_commit, provenance
from navrl.experiments.pipeline import load_policy, run_sft
from navrl.fileio import atomic_write_bytes, atomic_write_text
from navrl.rl.callbacks import CheckpointCallback, EvalCallback
from navrl.rl.config import ConfigError
from navrl.rl.presets import get_preset
from navrl.rl.trainer import Trainer
from navrl.eval import evaluate, failures_fixed, paired_counts, paired_difference_interval
from navrl.tasks.registry import suites


class _MethodFile(BaseModel):
    """One ``methods:`` entry of the YAML, checked strictly (pydantic)."""
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1)
    estimator: str = Field(min_length=1)
    reward: str = "default"


class _TableFile(BaseModel):
    """The YAML file's schema: wrong types, unknown keys and out-of-range counts are errors."""
    model_config = ConfigDict(extra="forbid", strict=True)
    preset: str = "demo"
    seed: int = 0
    updates: int = Field(24, ge=1)
    eval_at: list[int] = Field(default_factory=lambda: [0, 12, 24], min_length=1)
    eval_episodes: int = Field(160, ge=1)
    suites: list[str] = Field(default_factory=lambda: ["test-ios", "test-android", "test-unseen"], min_length=1)
    rl_seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    methods: list[_MethodFile] = Field(min_length=1)


@dataclass
class Method:
    name: str
    estimator: str
    reward: str = "default"


@dataclass
class TableConfig:
    preset: str = "demo"
    seed: int = 0
    updates: int = 24
    eval_at: list[int] = field(default_factory=lambda: [0, 12, 24])
    eval_episodes: int = 160
    suites: list[str] = field(default_factory=lambda: ["test-ios", "test-android", "test-unseen"])
    methods: list[Method] = field(default_factory=list)
    rl_seeds: list[int] = field(default_factory=lambda: [0])
    """Training seeds per method: every run starts from the one SFT checkpoint (trained with
    ``seed``); the RL seed draws its tasks and samples (seed spread next to sampling noise)."""

    @staticmethod
    def load(path: str | Path) -> "TableConfig":
        p = Path(path)
        f = load_config_file(p, _TableFile)
        cfg = TableConfig(preset=f.preset, seed=f.seed, updates=f.updates, eval_at=list(f.eval_at),
                          eval_episodes=f.eval_episodes, suites=list(f.suites),
                          methods=[Method(m.name, m.estimator, m.reward) for m in f.methods],
                          rl_seeds=list(f.rl_seeds))
        try:
            return cfg.validate()
        except ConfigError as e:
            raise ConfigError(f"{p}: {e}") from None

    def validate(self) -> "TableConfig":
        if not self.methods:
            raise ConfigError("no methods")
        if self.updates < 1 or any(u < 0 or u > self.updates for u in self.eval_at) or 0 not in self.eval_at:
            raise ConfigError("eval_at must lie in [0, updates] and include 0 (the SFT checkpoint)")
        known = suites()
        for s in self.suites:
            if s not in known:
                raise ConfigError(f"unknown suite {s!r}; choose from {sorted(known)}")
        if len(set(self.rl_seeds)) != len(self.rl_seeds):
            raise ConfigError("rl_seeds must be distinct")
        slugs = [_slug(m.name) for m in self.methods]
        if len(set(slugs)) != len(slugs) or "sft" in slugs:
            raise ConfigError("method names must be distinct (they name the run folders) and not 'SFT'")
        get_preset(self.preset)
        for m in self.methods:
            get_preset(self.preset, {"advantage.estimator": m.estimator, "rollout.reward_preset": m.reward})
        return self


Outcomes = dict  # (method, RL seed or None for SFT, update, suite) -> {task id: success}


def run_paper_table(cfg: TableConfig, out: str | Path, command: str = "", log=print) -> Path:
    out = Path(out)
    t0 = time.perf_counter()
    prov = provenance(cfg.seed, _cfg_dict(cfg))   # the checkout the run starts from (it may change while it runs)
    preset = get_preset(cfg.preset, {"run.seed": cfg.seed})
    log(f"SFT ({cfg.preset} preset)")
    _, sres = run_sft(preset, out / "sft", seed=cfg.seed)
    sft_path = out / "sft" / "sft.pt"
    rows: list[dict] = []
    outcomes: Outcomes = {}   # per-task success, for paired comparisons

    def eval_row(method: str, seed: int | None, update: int, policy) -> None:
        policy = greedy(policy)
        for s in cfg.suites:
            r = evaluate(policy, s, cfg.eval_episodes, seed=cfg.seed + 7)
            outcomes[(method, seed, update, s)] = r.successes_by_task()
            d = r.to_dict()   # success, interval and means are None when every episode was masked
            rows.append({"method": method, "seed": "" if seed is None else seed, "update": update, "suite": s,
                         "success": d["success"], "ci_low": d["ci_low"], "ci_high": d["ci_high"], "n": r.n,
                         "successes": r.successes, "mean_length": d["mean_length"],
                         "mean_return": d["mean_return"], "masked": r.masked})
            tag = f"{method} s{seed}" if seed is not None else method
            if r.measured:
                lo, hi = r.interval
                log(f"  {tag:28s} @{update:3d} {s:13s} {100 * r.success_rate:5.1f}% "
                    f"[{100 * lo:.1f}-{100 * hi:.1f}] len {r.mean_length:.1f}")
            else:
                log(f"  {tag:28s} @{update:3d} {s:13s} not measured: all {r.masked} episodes masked")

    eval_row("SFT", None, 0, load_policy(sft_path))
    for m in cfg.methods:
        for k in cfg.rl_seeds:
            log(f"{m.name}, RL seed {k}: {cfg.updates} updates ({m.estimator}, reward {m.reward})")
            p = get_preset(cfg.preset, {"run.seed": k, "advantage.estimator": m.estimator,
                                        "rollout.reward_preset": m.reward, "run.num_updates": cfg.updates,
                                        "run.eval_every": 0})
            # PPO-ptx presets keep a supervised term on the SFT stage's own demonstrations
            tr = Trainer(load_policy(sft_path), p.train, out / "runs" / run_name(m, k),
                         sft_demos=sres.demos if p.train.policy.sft_coef > 0 else None)
            # evaluated at the updates of eval_at; one checkpoint, at the end
            tr.fit(cfg.updates, [EvalCallback(lambda t: eval_row(m.name, k, t.update, t.policy), at=cfg.eval_at),
                                 CheckpointCallback()])
    minutes = (time.perf_counter() - t0) / 60
    write_outputs(cfg, rows, out, command=command, minutes=minutes,
                  comparisons=paired_comparisons(cfg, outcomes), prov=prov)
    return out / "results.md"


def run_name(m: Method, seed: int) -> str:
    """The run folder of method ``m`` with RL seed ``seed`` (under ``runs/``)."""
    return f"{_slug(m.name)}-s{seed}"


def paired_comparisons(cfg: TableConfig, outcomes: Outcomes) -> list[dict]:
    """Each method and RL seed at its last evaluation vs SFT, and vs the first method with the
    same seed, per suite: the difference in success with Newcombe's paired interval (same
    tasks, matched by task id)."""
    last = max(cfg.eval_at)
    pairs = [(m.name, k, last, "SFT", None, 0) for m in cfg.methods for k in cfg.rl_seeds]
    if cfg.methods:
        ref = cfg.methods[0].name
        pairs += [(m.name, k, last, ref, k, last) for m in cfg.methods[1:] for k in cfg.rl_seeds]
    out = []
    for name, k, u, other, ko, uo in pairs:
        for s in cfg.suites:
            x, y = outcomes.get((name, k, u, s)), outcomes.get((other, ko, uo, s))
            if x is None or y is None:
                continue
            a, b, c, d = paired_counts(x, y)
            n = a + b + c + d
            lo, hi = paired_difference_interval(a, b, c, d)
            out.append({"method": name, "seed": k, "update": u, "vs": other, "vs_seed": ko, "vs_update": uo,
                        "suite": s, "tasks": n, "difference": (b - c) / n if n else None,
                        "ci_low": lo if n else None, "ci_high": hi if n else None, "only_method": b, "only_vs": c})
    return out


def _slug(s: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in s.lower()).split())


def write_outputs(cfg: TableConfig, rows: list[dict], out: Path, command: str = "", minutes: float = 0.0,
                  comparisons: list[dict] | None = None, prov: dict | None = None) -> None:
    """results.csv / .json / .md and the plots; ``prov``: the run's provenance as read at its start
    (read now where none is given)."""
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out / "results.csv", buf.getvalue())
    ev = explained_variance_by_run(cfg, out)
    found = findings(cfg, rows, ev)
    atomic_write_text(out / "results.json", json.dumps({"config": _cfg_dict(cfg), "rows": rows,
                                                        "comparisons": comparisons or [], "findings": found,
                                                        "failures_fixed": failures_fixed_rows(cfg, rows),
                                                        "explained_variance_before": ev,
                                                        **(prov or provenance(cfg.seed, _cfg_dict(cfg))), "command": command,
                                                        "minutes": minutes}, indent=2))
    atomic_write_text(out / "results.md", results_markdown(cfg, rows, command, minutes, comparisons, found))
    _plots(cfg, rows, out)
    _ev_plot(cfg, ev, out)


def _cfg_dict(cfg: TableConfig) -> dict:
    d = dict(cfg.__dict__)
    d["methods"] = [m.__dict__ for m in cfg.methods]
    return d


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def seed_values(rows: list[dict], method: str, update: int, suite: str, key: str = "success") -> list[float]:
    """``key`` of each RL seed's (or SFT's one) evaluation of ``method`` at ``update`` on ``suite``."""
    return [r[key] for r in rows if r["method"] == method and r["update"] == update and r["suite"] == suite
            and r[key] is not None]


def explained_variance_by_run(cfg: TableConfig, out: Path) -> dict[str, list[float | None]]:
    """The critic's explained variance of the returns *before* each update (the value
    baseline the advantages used), per run folder, read from its metrics.jsonl; runs whose
    estimator has no critic are left out."""
    from navrl.rl.metrics import read_metrics
    res: dict[str, list[float | None]] = {}
    for m in cfg.methods:
        for k in cfg.rl_seeds:
            d = out / "runs" / run_name(m, k)
            if not (d / "metrics.jsonl").is_file():
                continue
            ups = [r for r in read_metrics(d) if r.get("kind") == "update"]
            vals = [r.get("critic/explained_variance_before") for r in ups]
            if any(v is not None for v in vals):
                res[run_name(m, k)] = vals
    return res


def findings(cfg: TableConfig, rows: list[dict], ev: dict[str, list[float | None]]) -> dict:
    """The comparisons the transcript draws, as measured here (means over RL seeds, first
    suite): dense PPO at N vs terminal-only PPO at 2N; GiGPPO's updates to reach PPO's final
    score; the critics' explained variance; the cautionary reward's effect on length and
    success against the same estimator with the default reward."""
    suite, last = cfg.suites[0], max(cfg.eval_at)
    by_est = {(m.estimator, m.reward): m for m in cfg.methods}
    f: dict = {"suite": suite}
    ppo, term = by_est.get(("ppo", "default")), by_est.get(("ppo_terminal_only", "default"))
    half = [u for u in cfg.eval_at if 0 < u and 2 * u in cfg.eval_at]
    if ppo and term and half:
        n = max(half)
        f["dense_vs_terminal"] = {"n": n, "dense_at_n": _mean(seed_values(rows, ppo.name, n, suite)),
                                  "terminal_at_2n": _mean(seed_values(rows, term.name, 2 * n, suite))}
    gig = by_est.get(("gigppo", "default"))
    if ppo and gig:
        target = _mean(seed_values(rows, ppo.name, last, suite))
        reach = None
        if target is not None:
            for u in sorted(x for x in cfg.eval_at if x > 0):
                v = _mean(seed_values(rows, gig.name, u, suite))
                if v is not None and v >= target:
                    reach = u
                    break
        f["gigppo_reach"] = {"ppo_final": target, "updates": reach}
    evs = {}
    for m in (ppo, gig):
        runs = [ev.get(run_name(m, k), []) for k in cfg.rl_seeds] if m is not None else []
        vals = [v for r in runs for v in r if v is not None]
        if vals:
            evs[m.name] = {"mean": _mean(vals), "first": _mean([r[0] for r in runs if r and r[0] is not None]),
                           "last_half": _mean(vals[len(vals) // 2:])}
    if evs:
        f["explained_variance_before"] = evs
    for m in cfg.methods:
        base = by_est.get((m.estimator, "default"))
        if m.reward != "default" and base is not None:
            f.setdefault("reward_effect", []).append({
                "method": m.name, "vs": base.name,
                "length": _mean(seed_values(rows, m.name, last, suite, "mean_length")),
                "vs_length": _mean(seed_values(rows, base.name, last, suite, "mean_length")),
                "success": _mean(seed_values(rows, m.name, last, suite)),
                "vs_success": _mean(seed_values(rows, base.name, last, suite)),
                "sft_length": _mean(seed_values(rows, "SFT", 0, suite, "mean_length"))})
    return f


TRANSCRIPT_FAILURES_FIXED = {"in distribution": (0.17, 0.324), "iOS -> Android": (0.047, 0.328)}
"""The transcript's supervised baseline -> PPO success (UINavBench 17 -> 32.4%, AndroidWorld 4.7 ->
32.8%): the share of the baseline's failures RL fixes there is 18.6% and 29.5%."""


def failures_fixed_rows(cfg: TableConfig, rows: list[dict]) -> list[dict]:
    """Per method, at its last evaluation: the share of SFT's failures it fixes on each suite
    (mean success over RL seeds), beside the transcript's 18.6% (in distribution) and 29.5%
    (iOS -> Android)."""
    last = max(cfg.eval_at)
    out = []
    for m in cfg.methods:
        row = {"method": m.name, "update": last}
        for s in cfg.suites:
            row[s] = failures_fixed(_mean(seed_values(rows, "SFT", 0, s)), _mean(seed_values(rows, m.name, last, s)))
        out.append(row)
    return out


def _failures_fixed_md(cfg: TableConfig, rows: list[dict]) -> list[str]:
    ff = failures_fixed_rows(cfg, rows)
    if not ff:
        return []
    (b1, r1), (b2, r2) = TRANSCRIPT_FAILURES_FIXED.values()
    lines = ["", "## Share of SFT's failures each method fixes", "",
             "(RL - SFT) / (1 - SFT) at the last evaluation, RL as the mean over seeds. The transcript's PPO fixes "
             f"{_pct(failures_fixed(b1, r1))} of its supervised baseline's failures in distribution "
             f"({100 * b1:.0f} -> {100 * r1:.1f}%) and {_pct(failures_fixed(b2, r2))} from iOS to Android "
             f"({100 * b2:.1f} -> {100 * r2:.1f}%): compare test-ios with the first, test-android with the second.", "",
             "| method | updates | " + " | ".join(cfg.suites) + " |", "|" + "---|" * (len(cfg.suites) + 2)]
    for r in ff:
        lines.append(f"| {r['method']} | {r['update']} | " + " | ".join(_pct(r[s]) for s in cfg.suites) + " |")
    return lines


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _findings_md(f: dict) -> list[str]:
    s = f["suite"]
    lines = ["", f"## The transcript's comparisons, as measured ({s}, means over RL seeds)", ""]
    if "dense_vs_terminal" in f:
        d = f["dense_vs_terminal"]
        lines.append(f"- Dense PPO after {d['n']} updates: {_pct(d['dense_at_n'])}; terminal-only PPO after "
                     f"{2 * d['n']}: {_pct(d['terminal_at_2n'])}.")
    if "gigppo_reach" in f:
        g = f["gigppo_reach"]
        lines.append(f"- GiGPPO reaches PPO's final {_pct(g['ppo_final'])} "
                     + (f"after {g['updates']} updates." if g["updates"] is not None
                        else "at none of the evaluated checkpoints."))
    for name, e in (f.get("explained_variance_before") or {}).items():
        lines.append(f"- {name}: critic's explained variance before each update: mean {e['mean']:.2f} "
                     f"(first update {e['first']:.2f}, last half {e['last_half']:.2f}); see "
                     "explained_variance.png.")
    for r in f.get("reward_effect", []):
        if None in (r["length"], r["vs_length"], r["sft_length"]):
            lines.append(f"- {r['method']}: not measured.")
            continue
        lines.append(f"- {r['method']} vs {r['vs']}: mean episode length {r['length']:.1f} vs "
                     f"{r['vs_length']:.1f} (SFT {r['sft_length']:.1f}); success {_pct(r['success'])} vs "
                     f"{_pct(r['vs_success'])}.")
    return lines


def _cell(rows: list[dict], name: str, u: int, s: str) -> str:
    rs = [r for r in rows if r["method"] == name and r["update"] == u and r["suite"] == s]
    if not rs:
        return "-"
    if all(r["success"] is None for r in rs):
        return "all masked"
    if len(rs) == 1:
        r = rs[0]
        return f"{100 * r['success']:.1f} [{100 * r['ci_low']:.0f}-{100 * r['ci_high']:.0f}]"
    vals = [r["success"] for r in sorted(rs, key=lambda r: r["seed"]) if r["success"] is not None]
    return f"{100 * _mean(vals):.1f} (" + " / ".join(f"{100 * v:.1f}" for v in vals) + ")"


def results_markdown(cfg: TableConfig, rows: list[dict], command: str, minutes: float,
                     comparisons: list[dict] | None = None, found: dict | None = None) -> str:
    from navrl.eval import wilson_interval
    n = cfg.eval_episodes
    lo, hi = wilson_interval(n // 2, n)
    multi = len(cfg.rl_seeds) > 1
    lines = ["# Results: the transcript's table on the phone world", "",
             f"- command: `{command or 'navrl experiment paper-table'}`",
             f"- commit: `{git_commit()}`",
             f"- preset `{cfg.preset}`, SFT seed {cfg.seed}, RL seeds {', '.join(map(str, cfg.rl_seeds))}, "
             f"{cfg.updates} updates per method and seed, {n} episodes per suite and checkpoint (the same tasks "
             f"for every row), {minutes:.0f} min", "",
             "Success rate in %; rows are methods at fixed update counts (update 0 = the shared SFT checkpoint). "
             + ("SFT: with its 95% Wilson interval. RL rows: the mean over RL seeds, then each seed's value in "
                "parentheses (seed spread); the sampling noise of one evaluation is a 95% interval of "
                f"+-{50 * (hi - lo):.1f} points at 50% success." if multi else
                "Each cell with its 95% Wilson interval."), ""]
    head = "| method | updates | " + " | ".join(cfg.suites) + f" | mean length ({cfg.suites[0]}) |"
    lines += [head, "|" + "---|" * (len(cfg.suites) + 3)]
    order = [("SFT", 0)] + [(m.name, u) for m in cfg.methods for u in sorted(cfg.eval_at) if u > 0]
    for name, u in order:
        cells = [_cell(rows, name, u, s) for s in cfg.suites]
        lens = seed_values(rows, name, u, cfg.suites[0], "mean_length")
        length = "-" if not lens else f"{_mean(lens):.1f}"
        lines.append(f"| {name} | {u} | " + " | ".join(cells) + f" | {length} |")
    if comparisons:
        lines += ["", "Differences in success (points) on the same evaluation tasks, matched by task id, with "
                  "Newcombe's paired 95% interval (1998, method 10); b / c = tasks only the first / only the "
                  "second solved.", "",
                  "| comparison | suite | tasks | difference | 95% CI | b / c |", "|---|---|---|---|---|---|"]
        for c in comparisons:
            if c["difference"] is None:
                continue
            left = f"{c['method']} s{c['seed']} @{c['update']}"
            right = f"{c['vs']} @{c['vs_update']}" if c["vs_seed"] is None else f"{c['vs']} s{c['vs_seed']} @{c['vs_update']}"
            lines.append(f"| {left} - {right} | {c['suite']} | {c['tasks']} "
                         f"| {100 * c['difference']:+.1f} | {100 * c['ci_low']:+.1f} to {100 * c['ci_high']:+.1f} "
                         f"| {c['only_method']} / {c['only_vs']} |")
    lines += _failures_fixed_md(cfg, rows)
    if found:
        lines += _findings_md(found)
    lines += ["", "![success vs updates](success_vs_updates.png)", "",
              "![episode length vs updates](length_vs_updates.png)", ""]
    if found and found.get("explained_variance_before"):
        lines += ["![critic explained variance before each update](explained_variance.png)", ""]
    return "\n".join(lines) + "\n"


def _ev_plot(cfg: TableConfig, ev: dict[str, list[float | None]], out: Path) -> None:
    if not ev:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, vals in sorted(ev.items()):
        pts = [(i + 1, v) for i, v in enumerate(vals) if v is not None]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker=".", label=name)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("update")
    ax.set_ylabel("explained variance before the update")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    b = io.BytesIO()
    fig.savefig(b, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(out / "explained_variance.png", b.getvalue())


def _plots(cfg: TableConfig, rows: list[dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for key, fname, ylabel in (("success", "success_vs_updates.png", "success (%)"),
                               ("mean_length", "length_vs_updates.png", "mean episode length (steps)")):
        fig, axes = plt.subplots(1, len(cfg.suites), figsize=(5 * len(cfg.suites), 4), squeeze=False)
        for ax, s in zip(axes[0], cfg.suites):
            sft = next((r for r in rows if r["method"] == "SFT" and r["suite"] == s), None)
            for m in cfg.methods:
                pts = [(0, sft[key])] if sft and sft[key] is not None else []
                pts += [(u, _mean(seed_values(rows, m.name, u, s, key))) for u in sorted(cfg.eval_at) if u > 0]
                pts = [(u, v) for u, v in pts if v is not None]
                if pts:
                    xs, ys = zip(*pts)
                    ys = [100 * y for y in ys] if key == "success" else ys
                    ax.plot(xs, ys, marker="o", label=m.name)
            ax.set_title(s)
            ax.set_xlabel("updates")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        b = io.BytesIO()
        fig.savefig(b, format="png", dpi=100)
        plt.close(fig)
        atomic_write_bytes(out / fname, b.getvalue())
