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
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from navrl.experiments.pipeline import load_policy, run_sft
from navrl.fileio import atomic_write_bytes, atomic_write_text
from navrl.rl.config import ConfigError
from navrl.rl.presets import get_preset
from navrl.rl.trainer import Trainer
from navrl.rollout.evaluate import evaluate
from navrl.tasks.suites import SUITES


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
        try:
            raw = yaml.safe_load(p.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read {p}: {e}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{p}: expected a mapping")
        known = {"preset", "seed", "updates", "eval_at", "eval_episodes", "suites", "methods"}
        bad = sorted(set(raw) - known)
        if bad:
            raise ConfigError(f"{p}: unknown keys {bad}")
        try:
            methods = [Method(**m) for m in raw.pop("methods", [])]
        except TypeError as e:
            raise ConfigError(f"{p}: bad method entry ({e})") from None
        cfg = TableConfig(**raw, methods=methods)
        return cfg.validate()

    def validate(self) -> "TableConfig":
        if not self.methods:
            raise ConfigError("no methods")
        if self.updates < 1 or any(u < 0 or u > self.updates for u in self.eval_at) or 0 not in self.eval_at:
            raise ConfigError("eval_at must lie in [0, updates] and include 0 (the SFT checkpoint)")
        for s in self.suites:
            if s not in SUITES:
                raise ConfigError(f"unknown suite {s!r}")
        get_preset(self.preset)
        for m in self.methods:
            get_preset(self.preset, estimator=m.estimator, reward_preset=m.reward)
        return self


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return "unknown"


def run_paper_table(cfg: TableConfig, out: str | Path, command: str = "", log=print) -> Path:
    out = Path(out)
    t0 = time.perf_counter()
    preset = get_preset(cfg.preset, seed=cfg.seed)
    log(f"SFT ({cfg.preset} preset)")
    run_sft(preset, out / "sft", seed=cfg.seed)
    sft_path = out / "sft" / "sft.pt"
    rows: list[dict] = []

    def eval_row(method: str, update: int, policy) -> None:
        policy.sample = False
        for s in cfg.suites:
            r = evaluate(policy, s, cfg.eval_episodes, seed=cfg.seed + 7)
            lo, hi = r.interval
            rows.append({"method": method, "update": update, "suite": s, "success": r.success_rate,
                         "ci_low": lo, "ci_high": hi, "n": r.n, "successes": r.successes,
                         "mean_length": r.mean_length, "mean_return": r.mean_return, "masked": r.masked})
            log(f"  {method:24s} @{update:3d} {s:13s} {100 * r.success_rate:5.1f}% "
                f"[{100 * lo:.1f}-{100 * hi:.1f}] len {r.mean_length:.1f}")
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
    write_outputs(cfg, rows, out, command=command, minutes=minutes)
    return out / "results.md"


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s.lower()).strip("-")


def write_outputs(cfg: TableConfig, rows: list[dict], out: Path, command: str = "", minutes: float = 0.0) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out / "results.csv", buf.getvalue())
    atomic_write_text(out / "results.json", json.dumps({"config": _cfg_dict(cfg), "rows": rows,
                                                        "commit": _git_commit(), "command": command,
                                                        "minutes": minutes}, indent=2))
    atomic_write_text(out / "results.md", results_markdown(cfg, rows, command, minutes))
    _plots(cfg, rows, out)


def _cfg_dict(cfg: TableConfig) -> dict:
    d = dict(cfg.__dict__)
    d["methods"] = [m.__dict__ for m in cfg.methods]
    return d


def results_markdown(cfg: TableConfig, rows: list[dict], command: str, minutes: float) -> str:
    idx = {(r["method"], r["update"], r["suite"]): r for r in rows}
    lines = ["# Results: the transcript's table on the phone world", "",
             f"- command: `{command or 'navrl experiment paper-table'}`",
             f"- commit: `{_git_commit()}`",
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
            cells.append(f"{100 * r['success']:.1f} [{100 * r['ci_low']:.0f}-{100 * r['ci_high']:.0f}]" if r else "-")
        r0 = idx.get((name, u, cfg.suites[0]))
        lines.append(f"| {name} | {u} | " + " | ".join(cells) + f" | {r0['mean_length']:.1f} |" if r0 else "")
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
                pts = [(0, sft[key])] if sft else []
                pts += sorted((r["update"], r[key]) for r in rows if r["method"] == m.name and r["suite"] == s)
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
