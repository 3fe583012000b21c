"""Advantage pipeline speed: returns + whitening + nearest-sibling search (CPU, no grad).

Batches of tasks x 8 rollouts x 30 steps (docs/design.md §5e defaults: 16 tasks per update), with random
episode lengths, 5 % invalid trajectories and random 64-bit screenshot hashes. Prints the
median over repeats in milliseconds and the 64-vs-16 ratio: the neighbour search works per task
group, so 4x the groups should cost about 4x (linear), not 16x (quadratic in the batch).
Benchmarks print; they assert nothing about timings.
"""

from __future__ import annotations

import statistics
import time

import torch

from navrl.rl.advantages import discounted_returns, effective_step_mask, masked_whiten
from navrl.rl.gigppo import nearest_sibling_grid

ROLLOUTS, STEPS, REPEATS = 8, 30, 25


def make_batch(tasks: int, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    B = tasks * ROLLOUTS
    lengths = torch.randint(1, STEPS + 1, (B,), generator=gen)
    return {
        "step_rewards": torch.randint(-2, 2, (B, STEPS), generator=gen).float(),
        "terminal_rewards": torch.randint(-1, 3, (B,), generator=gen).float(),
        "step_mask": torch.arange(STEPS).unsqueeze(0) < lengths.unsqueeze(1),
        "valid": torch.rand(B, generator=gen) > 0.05,
        "values": torch.randn(B, STEPS, generator=gen),
        "group_ids": torch.arange(tasks).repeat_interleave(ROLLOUTS),
        "hashes": torch.randint(-(1 << 62), 1 << 62, (B, STEPS), generator=gen),
    }


def returns_and_whiten(b: dict[str, torch.Tensor]) -> None:
    mask = effective_step_mask(b["step_mask"], b["valid"])
    G = discounted_returns(b["step_rewards"], b["terminal_rewards"], mask, 0.5)
    masked_whiten(G - b["values"], mask)


def neighbours(b: dict[str, torch.Tensor]) -> None:
    nearest_sibling_grid(b["hashes"], b["group_ids"], b["step_mask"], b["valid"])


def full(b: dict[str, torch.Tensor]) -> None:
    returns_and_whiten(b)
    neighbours(b)


def measure(
    batches: dict[int, dict[str, torch.Tensor]], repeats: int = REPEATS
) -> dict[tuple[int, str], float]:
    """Median milliseconds per (tasks, stage). Within one batch size the stages alternate, so a
    burst of load from other processes hits each stage alike; batch sizes run one after the
    other (alternating them would re-fault freshly released memory on every switch)."""
    stages = {"returns+whiten": returns_and_whiten, "nearest_sibling": neighbours, "total": full}
    times: dict[tuple[int, str], list[float]] = {(t, k): [] for t in batches for k in stages}
    for tasks, b in batches.items():
        for _ in range(3):  # warm-up (allocator, first-call dispatch)
            full(b)
        for _ in range(repeats):
            for name, fn in stages.items():
                t0 = time.perf_counter()
                fn(b)
                times[(tasks, name)].append((time.perf_counter() - t0) * 1e3)
    return {key: statistics.median(v) for key, v in times.items()}


def main() -> None:
    # One thread: figures that do not depend on how busy the other cores are.
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, median of {REPEATS} runs")
    batches = {tasks: make_batch(tasks) for tasks in (16, 64)}
    res = measure(batches)
    stages = ("returns+whiten", "nearest_sibling", "total")
    for tasks, b in batches.items():
        states = int(b["step_mask"].sum())
        row = "  ".join(f"{k} {res[(tasks, k)]:7.2f} ms" for k in stages)
        print(f"{tasks:3d} tasks x {ROLLOUTS} x {STEPS} ({states:5d} real steps): {row}")
    for key in stages:
        ratio = res[(64, key)] / res[(16, key)]
        print(f"ratio 64 vs 16 tasks, {key:16s}: {ratio:5.2f}x  (linear would be ~4x, quadratic ~16x)")


if __name__ == "__main__":
    main()
