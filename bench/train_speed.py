"""Time per online-RL update at docs/design.md §5e's size: 16 tasks x 8 rollouts x <= 30 steps, split
into rollout (planner, devices, grounder) / judge / advantages / update — the update split
again into its PPO term, its supervised terms (the preset's PPO-ptx), the backward passes
with the optimiser steps, and the critic's fit — for the pointer planner (the `demo`
preset's, target <= 3 s per update on 2 cores, issue #27) and, with `--text`, the tiny text
planner (`demo-text`, target <= 60 s). The last line gives each phase's mean over the updates,
and the process's CPU seconds per update (every thread: the work done, steadier than the wall
clock on a machine other jobs load).

The planner is first warm-started with a short SFT (realistic decisions, not noise).
With ``--overlap`` the run is ``Trainer.fit`` with ``run.overlap`` (the next batch collected while a
learner process learns from the last, one torch thread each): an update's wall time is then the
time between two updates' ends, about the larger of its rollout and its learning; the first
update has nothing to overlap with, so the steady state (updates 2..N) is printed beside the mean.

Prints; asserts nothing. Usage: python bench/train_speed.py [UPDATES] [--text] [--threads N]
[--overlap] [--sft-cache DIR] (DIR keeps the warm start's planner and demonstrations for the next run).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from navrl.experiments.pipeline import load_policy, run_sft, save_policy
from navrl.rl.presets import get_preset
from navrl.rl.sft import Demo, SFTConfig
from navrl.rl.callbacks import Callback
from navrl.rl.trainer import Trainer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("updates", nargs="?", type=int, default=3)
    ap.add_argument("--text", action="store_true", help="the tiny text planner instead of the pointer planner")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sft-cache", type=Path, help="reuse (or write) the SFT warm start in this folder")
    ap.add_argument("--overlap", action="store_true", help="run.overlap: collect beside a learner process")
    a = ap.parse_args()
    name, target = ("demo-text", 60.0) if a.text else ("demo", 3.0)
    base = get_preset(name)
    preset = replace(base, sft=replace(base.sft, n_tasks=200, epochs=2) if not a.text else
                     SFTConfig(n_tasks=200, epochs=2, lr=4e-3, batch_size=16),
                     train=base.train.override({"run.torch_threads": a.threads}))
    cfg = preset.train.override({"rollout.tasks_per_update": 16, "rollout.rollouts_per_task": 8,
                                 "rollout.max_steps": 30, "critic.critic_warmup_updates": 1,
                                 "run.overlap": a.overlap})
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        policy, demos = _warm_start(preset, tmp, a.sft_cache)
        print(f"{name}: short SFT warm start {time.perf_counter() - t0:.0f} s ({policy.n_params():,} parameters), "
              f"{a.threads} torch threads")
        tr = Trainer(policy, cfg, tmp, log=False, sft_demos=demos if cfg.policy.sft_coef > 0 else None)
        if a.overlap:
            _overlapped(tr, a.updates, target)
            return
        walls, cpus, phases = [], [], []
        for _ in range(a.updates):
            rt0 = dict(tr.runner.timings)
            t0, c0 = time.perf_counter(), time.process_time()
            m = tr.train_step().metrics
            wall = time.perf_counter() - t0
            walls.append(wall)
            cpus.append(time.process_time() - c0)
            tm = m["time"]
            rt = {k: tr.runner.timings[k] - rt0[k] for k in rt0}
            ph = {"rollout": tm["rollout"] - tm["judge"], "planner": rt["planner"], "devices": rt["device"],
                  "grounder": rt["grounder"], "judge": tm["judge"], "advantages": tm["advantages"],
                  "update": tm["update"], "ppo": tm.get("update_ppo", 0.0), "ptx": tm.get("update_ptx", 0.0),
                  "backward+step": tm.get("update_step", 0.0), "critic": tm.get("update_critic", 0.0)}
            phases.append(ph)
            print(f"update {tr.update} ({'critic warm-up' if m['policy_frozen'] else 'policy + critic'}): "
                  f"{wall:5.1f} s (CPU {cpus[-1]:.1f} s) = {_split(ph)}  "
                  f"[{m['samples']} planner outputs, mean length {m['episode_length']:.1f}] "
                  f"-> {wall / target:.2f}x the {target:.0f} s target")
        mean = sum(walls) / len(walls)
        avg = {k: sum(p[k] for p in phases) / len(phases) for k in phases[0]}
        print(f"mean {mean:.1f} s per update (CPU {sum(cpus) / len(cpus):.2f} s) over {len(walls)} updates = {_split(avg)} "
              f"-> {mean / target:.2f}x the {target:.0f} s target")


def _overlapped(tr: Trainer, updates: int, target: float) -> None:
    """``run.overlap``: wall seconds between update ends, each update's rollout (its batch's
    collection, in this process) and learning (the learner process's)."""
    marks: list[float] = []

    class Clock(Callback):
        def on_update_end(self, trainer, stats):
            m = stats.metrics
            tm = m["time"]
            marks.append(time.perf_counter())
            wall = marks[-1] - (marks[-2] if len(marks) > 1 else t0)
            print(f"update {stats.update} (lag {m['lag']}): {wall:5.1f} s; its rollout {tm['rollout']:.2f} s, its "
                  f"learning {tm['advantages'] + tm['update']:.2f} s (update {tm['update']:.2f}: ppo "
                  f"{tm.get('update_ppo', 0):.2f}, ptx {tm.get('update_ptx', 0):.2f}, backward+step "
                  f"{tm.get('update_step', 0):.2f}, proximal log-probs {tm.get('update_refresh', 0):.2f}) "
                  f"[{m['samples']} planner outputs, mean length {m['episode_length']:.1f}] -> {wall / target:.2f}x")

    t0, c0 = time.perf_counter(), time.process_time()
    tr.fit(updates, [Clock()])
    walls = [b - a for a, b in zip([t0] + marks, marks)]
    steady = walls[1:] or walls
    print(f"mean {sum(walls) / len(walls):.1f} s per update over {len(walls)} updates, steady state (updates 2..) "
          f"{sum(steady) / len(steady):.1f} s -> {sum(steady) / len(steady) / target:.2f}x the {target:.0f} s target "
          f"(CPU of this process {(time.process_time() - c0) / len(walls):.2f} s per update, the learner's not counted)")


def _warm_start(preset, tmp: str, cache: Path | None):
    """(planner, demonstrations) of the short SFT, from ``cache`` when it holds them."""
    if cache is not None and (cache / f"{preset.name}.pt").exists():
        demos = [Demo(**d) for d in json.loads((cache / f"{preset.name}.demos.json").read_text())]
        return load_policy(cache / f"{preset.name}.pt"), demos
    policy, sres = run_sft(preset, tmp)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / f"{preset.name}.demos.json").write_text(json.dumps([vars(d) for d in sres.demos]))
        save_policy(policy, cache / f"{preset.name}.pt")
    return policy, sres.demos


def _split(ph: dict) -> str:
    """One update's seconds by phase, as printed."""
    return (f"rollout {ph['rollout']:.2f} (planner {ph['planner']:.2f}, devices {ph['devices']:.2f}, grounder "
            f"{ph['grounder']:.2f}) + judge {ph['judge']:.2f} + advantages {ph['advantages']:.2f} + update "
            f"{ph['update']:.2f} (ppo {ph['ppo']:.2f}, ptx {ph['ptx']:.2f}, backward+step {ph['backward+step']:.2f}, "
            f"critic {ph['critic']:.2f})")

if __name__ == "__main__":
    main()
