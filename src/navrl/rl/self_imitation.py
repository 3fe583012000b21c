"""Self-imitation (Oh, Guo, Singh and Lee, ICML 2018): learn directly from the planner's own
good decisions.

PPO's clipped ratio lets a decision grow by about (1 + clip) per update; one the SFT planner
almost never makes (``Go home``: SFT never demonstrates it) stays rare however often the
judges reward it when exploration tries it. The self-imitation term is the log-likelihood of
past outputs that earned a positive step reward (or, ``episode``, belong to a successful
episode) *and* a positive advantage, kept in a
first-in-first-out buffer and added to every policy minibatch (like PPO-ptx's demonstrations,
but the data are the planner's own)."""
from __future__ import annotations

import torch

from navrl.agent.policy.base import Policy
from navrl.rl.batch import Batch
from navrl.rl.sft import token_nll


def positive_outputs(batch: Batch, advantages: torch.Tensor,
                     succeeded: torch.Tensor | None = None) -> list[tuple[str, list[int]]]:
    """(prompt, output ids) of every sample with advantage > 0 and a step reward > 0, or, with
    ``succeeded`` (bool [B]: the trajectory's episode succeeded; ``exploration.self_imitation_select``
    ``episode``), every sample with advantage > 0 of a successful episode.

    ``advantages`` float [B, T] (the estimator's, aligned with ``batch.step_rewards``)."""
    def earned(s) -> bool:
        return bool(succeeded[s.b]) if succeeded is not None else float(batch.step_rewards[s.b, s.t]) > 0
    return [(s.prompt, list(s.output_ids)) for s in batch.samples if float(advantages[s.b, s.t]) > 0 and earned(s)]


def self_imitation_loss(policy: Policy, items: list[tuple[str, list[int]]]) -> torch.Tensor:
    """Mean negative log-likelihood per output token of ``items`` under ``policy`` (scalar)."""
    return token_nll(policy, [p for p, _ in items], [ids for _, ids in items])
