"""Exploration diagnostics of one update (issue #26): is there anything to learn from this batch?

A group of sibling rollouts whose outcomes are all equal carries no group-relative advantage,
a sample whose advantage is 0 moves nothing in the clipped surrogate, and a decision factor
whose entropy has collapsed is not explored any more. These are the numbers that say why RL
stalls when it does (docs/results/exploration.md); the trainer logs them with every update
under ``diag`` (``metrics.jsonl`` and TensorBoard) and ``navrl report`` plots them.

Shapes: B trajectories, T steps, N scored samples, L output positions of a sample (the
pointer planner's factors: kind, node-or-text, frame).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

import torch
from torch import Tensor

__all__ = ["zero_variance_groups", "zero_advantage_share", "factor_entropy", "success_by_family",
           "success_by_template", "behaviour_gap"]


@torch.no_grad()
def zero_variance_groups(outcomes: Tensor, group_ids: Tensor, valid: Tensor, tol: float = 1e-9) -> tuple[int, int]:
    """(groups whose valid members' outcomes are all equal, groups with at least two valid members).

    Args:
        outcomes: float [B] one number per trajectory (success, or the episode score).
        group_ids: long [B] the task group of each trajectory (siblings share one).
        valid: bool [B] masked trajectories are left out; a group with fewer than two valid
            members has no variance to speak of and is not counted at all.
    """
    out = outcomes.double()
    flat, total = 0, 0
    for g in torch.unique(group_ids[valid.bool()]).tolist():
        sel = out[(group_ids == g) & valid.bool()]
        if sel.numel() < 2:
            continue
        total += 1
        flat += int(float(sel.max() - sel.min()) <= tol)
    return flat, total


@torch.no_grad()
def zero_advantage_share(advantages: Tensor, mask: Tensor, tol: float = 1e-8) -> float | None:
    """Share of the masked entries (valid steps) whose |advantage| <= ``tol``; None when none.

    Args:
        advantages: float [B, T] (or [N]) per-step advantages.
        mask: bool, same shape: the steps that count (valid trajectory, real step).
    """
    m = mask.bool()
    n = int(m.sum())
    if n == 0:
        return None
    zero = (advantages.abs() <= tol) & m
    return float(zero.sum()) / n


@torch.no_grad()
def factor_entropy(entropy: Tensor, mask: Tensor, factors: Sequence[Sequence[str]]) -> dict[str, float]:
    """Mean entropy (nats) of each named decision factor over the samples where it was decided.

    Args:
        entropy: float [N, L] per-position entropy of the policy's distribution.
        mask: float or bool [N, L] 1 where position l of sample n was decided.
        factors: N rows of L names (the factor position l of sample n stands for, e.g.
            ``("kind", "node", "frame")`` or ``("kind", "text", "frame")``).
    Returns:
        name -> mean entropy over the decided positions of that name (names never decided
        are absent).
    """
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    e, m = entropy.detach().double().tolist(), mask.detach().bool().tolist()
    for row_e, row_m, names in zip(e, m, factors):
        for v, on, name in zip(row_e, row_m, names):
            if on:
                sums[name] += v
                counts[name] += 1
    return {k: sums[k] / counts[k] for k in sums}


def _success_by(trajectories: Iterable, keys: tuple[str, ...]) -> dict[str, float]:
    n: dict[str, int] = defaultdict(int)
    k: dict[str, int] = defaultdict(int)
    for t in trajectories:
        if not t.valid:
            continue
        task = t.task if isinstance(t.task, dict) else {}
        name = str(next((task[key] for key in keys if task.get(key)), "?"))
        n[name] += 1
        k[name] += int(bool(t.success))
    return {f: k[f] / n[f] for f in sorted(n)}


def success_by_family(trajectories: Iterable) -> dict[str, float]:
    """Success rate of the valid trajectories per task family (``task["family"]``, else its
    ``template``, else ``"?"``)."""
    return _success_by(trajectories, ("family", "template"))


def success_by_template(trajectories: Iterable) -> dict[str, float]:
    """Success rate of the valid trajectories per task template (a phone-world template, a
    MiniWoB++ task: one family, ``single``, holds every MiniWoB++ task), else ``"?"``."""
    return _success_by(trajectories, ("template",))


def behaviour_gap(pairs: Iterable[tuple[Sequence[float], Sequence[float]]], clip_eps: float) -> dict[str, float] | None:
    """How far exploring rollouts' behaviour mu was from the planner pi_old on the tokens it
    sampled: ``outside_clip``, the share whose pi_old / mu lies outside [1 - eps, 1 + eps] (with
    ``policy.off_policy_ratio`` ``behaviour`` those tokens start the update outside PPO's trust
    region: a favourite choice's positive advantage clipped, an explored one's scaled toward 0),
    and ``kl``, the token mean of the k3 estimate (pi_old/mu - 1) - log(pi_old/mu) of KL(mu || pi_old).
    None when no sample was drawn by a mixing behaviour.

    Args:
        pairs: (behaviour log-probs, planner log-probs) of each sample that has both, token by token.
        clip_eps: PPO's clip range.
    """
    from navrl.rl.losses import kl_k3
    both = [(b, p) for mu, pi in pairs for b, p in zip(mu, pi)]
    if not both:
        return None
    mu, pi = torch.tensor(both, dtype=torch.float64).unbind(1)
    r = (pi - mu).exp()
    outside = ((r < 1 - clip_eps) | (r > 1 + clip_eps)).double().mean()
    return {"outside_clip": float(outside), "kl": float(kl_k3(mu, pi).mean())}
