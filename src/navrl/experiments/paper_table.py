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

from navrl.experiments.common import git_commit, load_config_file
from navrl.experiments.pipeline import load_policy, run_sft
from navrl.fileio import atomic_write_bytes, atomic_write_text
from navrl.rl.config import ConfigError
from navrl.rl.presets import get_preset
from navrl.rl.trainer import Trainer
from navrl.eval import evaluate, paired_counts, paired_difference_interval
from navrl.tasks.suites import SUITES


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

    @staticmethod
    def load(path: str | Path) -> "TableConfig":
        p = Path(path)
        f = load_config_file(p, _TableFile)
        cfg = TableConfig(preset=f.preset, seed=f.seed, updates=f.updates, eval_at=list(f.eval_at),
                          eval_episodes=f.eval_episodes, suites=list(f.suites),
                          methods=[Method(m.name, m.estimator, m.reward) for m in f.methods])
        try:
            return cfg.validate()
        except ConfigError as e:
            raise ConfigError(f"{p}: {e}") from None

    def validate(self) -> "TableConfig":
        if not self.methods:
            raise ConfigError("no methods")
        if self.updates < 1 or any(u < 0 or u > self.updates for u in self.eval_at) or 0 not in self.eval_at:
            raise ConfigError("eval_at must lie in [0, updates] and include 0 (the SFT checkpoint)")
        for s in self.suites:
            if s not in SUITES:
                raise ConfigError(f"unknown suite {s!r}; choose from {sorted(SUITES)}")
        slugs = [_slug(m.name) for m in self.methods]
        if len(set(slugs)) != len(slugs) or "sft" in slugs:
            raise ConfigError("method names must be distinct (they name the run folders) and not 'SFT'")
        get_preset(self.preset)
        for m in self.methods:
            get_preset(self.preset, estimator=m.estimator, reward_preset=m.reward)
        return self


def run_paper_table(cfg: TableConfig, out: str | Path, command: str = "", log=print) -> Path:
    out = Path(out)
    t0 = time.perf_counter()
    preset = get_preset(cfg.preset, seed=cfg.seed)
    log(f"SFT ({cfg.preset} preset)")
    run_sft(preset, out / "sft", seed=cfg.seed)
    sft_path = out / "sft" / "sft.pt"
    rows: list[dict] = []
    outcomes: dict[tuple[str, int, str], dict[str, bool]] = {}   # per-task success, for paired comparisons

    def eval_row(method: str, update: int, policy) -> None:
        policy.sample = False
        for s in cfg.suites:
            r = evaluate(policy, s, cfg.eval_episodes, seed=cfg.seed + 7)
            outcomes[(method, update, s)] = r.successes_by_task()
            d = r.to_dict()   # success, interval and means are None when every episode was masked
            rows.append({"method": method, "update": update, "suite": s, "success": d["success"],
                         "ci_low": d["ci_low"], "ci_high": d["ci_high"], "n": r.n, "successes": r.successes,
                         "mean_length": d["mean_length"], "mean_return": d["mean_return"], "masked": r.masked})
            if r.measured:
                lo, hi = r.interval
                log(f"  {method:24s} @{update:3d} {s:13s} {100 * r.success_rate:5.1f}% "
                    f"[{100 * lo:.1f}-{100 * hi:.1f}] len {r.mean_length:.1f}")
            else:
                log(f"  {method:24s} @{update:3d} {s:13s} not measured: all {r.masked} episodes masked")
        policy.sample = True

    eval_row("SFT", 0, load_policy(sft_path))
    for m in cfg.methods:
        log(f"{m.name}: {cfg.updates} updates ({m.estimator}, reward {m.reward})")
        p = get_preset(cfg.preset, seed=cfg.seed, estimator=m.estimator, reward_preset=m.reward,
                       num_updates=cfg.updates, eval_every=0)
        tr = Trainer(load_policy(sft_path), p.train, out / "runs" / _slug(m.name))
        while tr.update < cfg.updates:
            st = tr.train_step()
            if tr.update in cfg.eval_at:
                eval_row(m.name, tr.update, tr.policy)
        tr.save_checkpoint()
    minutes = (time.perf_counter() - t0) / 60
    write_outputs(cfg, rows, out, command=command, minutes=minutes,
                  comparisons=paired_comparisons(cfg, outcomes))
    return out / "results.md"


def paired_comparisons(cfg: TableConfig, outcomes: dict[tuple[str, int, str], dict[str, bool]]) -> list[dict]:
    """Each method at its last evaluation vs SFT, and vs the first method, per suite: the
    difference in success with Newcombe's paired interval (same tasks, matched by task id)."""
    last = max(cfg.eval_at)
    pairs = [(m.name, last, "SFT", 0) for m in cfg.methods]
    if cfg.methods:
        ref = cfg.methods[0].name
        pairs += [(m.name, last, ref, last) for m in cfg.methods[1:]]
    out = []
    for name, u, other, uo in pairs:
        for s in cfg.suites:
            x, y = outcomes.get((name, u, s)), outcomes.get((other, uo, s))
            if x is None or y is None:
                continue
            a, b, c, d = paired_counts(x, y)
            n = a + b + c + d
            lo, hi = paired_difference_interval(a, b, c, d)
            out.append({"method": name, "update": u, "vs": other, "vs_update": uo, "suite": s, "tasks": n,
                        "difference": (b - c) / n if n else None, "ci_low": lo if n else None,
                        "ci_high": hi if n else None, "only_method": b, "only_vs": c})
    return out


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s.lower()).strip("-")


def write_outputs(cfg: TableConfig, rows: list[dict], out: Path, command: str = "", minutes: float = 0.0,
                  comparisons: list[dict] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out / "results.csv", buf.getvalue())
    atomic_write_text(out / "results.json", json.dumps({"config": _cfg_dict(cfg), "rows": rows,
                                                        "comparisons": comparisons or [],
                                                        "commit": git_commit(), "command": command,
                                                        "minutes": minutes}, indent=2))
    atomic_write_text(out / "results.md", results_markdown(cfg, rows, command, minutes, comparisons))
    _plots(cfg, rows, out)


def _cfg_dict(cfg: TableConfig) -> dict:
    d = dict(cfg.__dict__)
    d["methods"] = [m.__dict__ for m in cfg.methods]
    return d


def results_markdown(cfg: TableConfig, rows: list[dict], command: str, minutes: float,
                     comparisons: list[dict] | None = None) -> str:
    idx = {(r["method"], r["update"], r["suite"]): r for r in rows}
    lines = ["# Results: the transcript's table on the phone world", "",
             f"- command: `{command or 'navrl experiment paper-table'}`",
             f"- commit: `{git_commit()}`",
             f"- preset `{cfg.preset}`, seed {cfg.seed}, {cfg.updates} updates per method, "
             f"{cfg.eval_episodes} episodes per suite and checkpoint, {minutes:.0f} min", "",
             "Success rate in % with the 95% Wilson interval; rows are methods at fixed update counts "
             "(update 0 = the shared SFT checkpoint).", ""]
    head = "| method | updates | " + " | ".join(cfg.suites) + " | mean length (test-ios) |"
    lines += [head, "|" + "---|" * (len(cfg.suites) + 3)]
    order = [("SFT", 0)] + [(m.name, u) for m in cfg.methods for u in sorted(cfg.eval_at) if u > 0]
    for name, u in order:
        cells = []
        for s in cfg.suites:
            r = idx.get((name, u, s))
            cells.append("-" if not r else "all masked" if r["success"] is None else
                         f"{100 * r['success']:.1f} [{100 * r['ci_low']:.0f}-{100 * r['ci_high']:.0f}]")
        r0 = idx.get((name, u, cfg.suites[0]))
        length = "-" if not r0 or r0["mean_length"] is None else f"{r0['mean_length']:.1f}"
        lines.append(f"| {name} | {u} | " + " | ".join(cells) + f" | {length} |" if r0 else "")
    if comparisons:
        lines += ["", "Differences in success (points) on the same evaluation tasks, matched by task id, with "
                  "Newcombe's paired 95% interval (1998, method 10); b / c = tasks only the first / only the "
                  "second solved.", "",
                  "| comparison | suite | tasks | difference | 95% CI | b / c |", "|---|---|---|---|---|---|"]
        for c in comparisons:
            if c["difference"] is None:
                continue
            lines.append(f"| {c['method']} @{c['update']} - {c['vs']} @{c['vs_update']} | {c['suite']} | {c['tasks']} "
                         f"| {100 * c['difference']:+.1f} | {100 * c['ci_low']:+.1f} to {100 * c['ci_high']:+.1f} "
                         f"| {c['only_method']} / {c['only_vs']} |")
    lines += ["", "![success vs updates](success_vs_updates.png)", "",
              "![episode length vs updates](length_vs_updates.png)", ""]
    return "\n".join(lines) + "\n"


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
                pts += sorted((r["update"], r[key]) for r in rows
                              if r["method"] == m.name and r["suite"] == s and r[key] is not None)
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
