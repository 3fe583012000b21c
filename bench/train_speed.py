"""Time per online-RL update with the tiny planner at DESIGN.md's size: 16 tasks x 8
rollouts x <= 30 steps, split into rollout / judge / advantages / update.

The planner is first warm-started with a short SFT (so it writes plans of realistic length,
not 72 tokens of noise). Target on 2 cores: <= 60 s per update. Prints; asserts nothing.
"""
from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace

import torch

from navrl.experiments.pipeline import run_sft
from navrl.rl.presets import get_preset
from navrl.rl.sft import SFTConfig
from navrl.rl.trainer import Trainer


def main(updates: int = 2) -> None:
    torch.set_num_threads(1)
    demo = get_preset("demo")
    preset = replace(demo, sft=SFTConfig(n_tasks=200, epochs=2, lr=4e-3, batch_size=16))
    cfg = replace(demo.train, tasks_per_update=16, rollouts_per_task=8, max_steps=30, critic_warmup_updates=1,
                  minibatch_size=64)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        policy, _ = run_sft(preset, tmp)
        print(f"short SFT warm start: {time.perf_counter() - t0:.0f} s ({policy.n_params():,} parameters)")
        tr = Trainer(policy, cfg, tmp, log=False)
        for _ in range(updates):
            t0 = time.perf_counter()
            m = tr.train_step().metrics
            wall = time.perf_counter() - t0
            tm = m["time"]
            rollout_only = tm["rollout"] - tm["judge"]
            print(f"update {tr.update} ({'critic warm-up' if m['policy_frozen'] else 'policy + critic'}): "
                  f"{wall:5.1f} s  = rollout {rollout_only:.1f} + judge {tm['judge']:.1f} + "
                  f"advantages {tm['advantages']:.1f} + update {tm['update']:.1f}  "
                  f"[{m['samples']} planner outputs, mean length {m['episode_length']:.1f}] "
                  f"-> {wall / 60:.2f}x the 60 s target")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
