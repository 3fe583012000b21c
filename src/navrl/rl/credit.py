"""Anchored credit: the ``gigpo_anchored`` advantage estimator (issue 26's "credit" obstacle).

GiGPO's advantage is A = A_episode + w * A_step: every step of an episode carries the episode's
group-relative advantage. When one early decision fails most episodes of a group (the Type step
3 before the end of a multi-app task), the correct decisions that follow it (``Tap "Send"``,
``Complete``) share the failed episodes' negative advantage and are pushed down; they are the
same decisions the planner needs on the good path, so RL *unlearns* the end of the task (measured
in docs/results/exploration.md: without PPO-ptx the last step falls from 38/48 to 21/48).

``gigpo_anchored`` gives a step its anchor group's comparison wherever one exists: a step whose
state (task group, state key) other sibling steps share gets (G - mean) / (std + eps) over that
anchor group only — 0 when they all fared alike, whatever the episode's fate; a step alone in
its state (no sibling to compare with) falls back to the episode advantage. So the decision at
the hand-over state (all siblings share it) is credited by the outcomes that followed each choice,
and a correct ``Complete`` reached after a wrong Type by several siblings is not blamed for it.
Registered on import (the trainer imports this module).
"""
from __future__ import annotations

import torch
from torch import Tensor

from navrl.rl.advantages import (AdvantageInputs, AdvantageOutputs, _episode_advantage, _segment_mean_std,
                                 discounted_returns, register_estimator)

__all__ = ["anchored_step_advantages", "gigpo_anchored_estimator"]

NAME = "gigpo_anchored"
EPS = 1e-6


@torch.no_grad()
def anchored_step_advantages(returns: Tensor, state_keys: Tensor, group_ids: Tensor,
                             step_mask: Tensor) -> tuple[Tensor, Tensor]:
    """(A [B, T], anchored [B, T] bool): the normalised anchor-group advantage of every step whose
    anchor group has more than one member, and which steps have one."""
    mask = step_mask.bool() & (state_keys >= 0)
    out = torch.zeros(returns.shape, dtype=returns.dtype)
    anchored = torch.zeros(returns.shape, dtype=torch.bool)
    if not bool(mask.any()):
        return out, anchored
    b, t = mask.nonzero(as_tuple=True)
    g = returns[b, t]
    key = torch.stack([group_ids[b].long(), state_keys[b, t].long()], dim=1)
    _, anchor = torch.unique(key, dim=0, return_inverse=True)
    count, mean, std = _segment_mean_std(g, anchor, int(anchor.max()) + 1)
    multi = count[anchor] > 1
    out[b, t] = torch.where(multi, (g - mean[anchor]) / (std[anchor] + EPS), torch.zeros_like(g))
    anchored[b, t] = multi
    return out, anchored


@register_estimator(NAME, needs_state_hashes=True, min_rollouts_per_task=2)
@torch.no_grad()
def gigpo_anchored_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """A = the anchor group's normalised comparison where a step has one, else the episode's
    group-relative advantage."""
    if inputs.state_keys is None:
        raise ValueError(f"advantage estimator {NAME!r} needs inputs.state_keys")
    adv_ep, mask = _episode_advantage(inputs)
    G = discounted_returns(inputs.step_rewards, inputs.terminal_rewards, mask, inputs.gamma)
    a_step, anchored = anchored_step_advantages(G, inputs.state_keys, inputs.group_ids, mask)
    adv = torch.where(anchored, a_step, adv_ep.to(G.dtype))
    return AdvantageOutputs(advantages=torch.where(mask, adv, torch.zeros((), dtype=G.dtype)), returns=G)
