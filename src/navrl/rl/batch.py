"""From trajectories to padded tensors: the :class:`Batch` the update reads."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from navrl.rollout.records import Trajectory


@dataclass
class Sample:
    """One planner output to train on: step ``t`` of trajectory ``b``."""
    b: int
    t: int
    prompt: str
    output_ids: list[int]
    old_logprobs: list[float]


@dataclass
class Batch:
    """Padded per-step tensors for B trajectories of at most T steps.

    step_rewards [B,T] dense rewards; terminal_rewards [B]; step_mask [B,T] bool real steps;
    valid [B] bool; group_ids [B] long; phash [B,T] long (0 where unknown);
    samples: the planner outputs of valid trajectories, in (b, t) order.
    """

    step_rewards: torch.Tensor
    terminal_rewards: torch.Tensor
    step_mask: torch.Tensor
    valid: torch.Tensor
    group_ids: torch.Tensor
    phash: torch.Tensor
    state_keys: torch.Tensor
    samples: list[Sample]

    @property
    def B(self) -> int:
        return self.step_rewards.shape[0]

    @staticmethod
    def from_trajectories(trajs: list[Trajectory]) -> "Batch":
        from navrl.rl.advantages import build_state_keys
        from navrl.rl.gigppo import to_signed64
        B = len(trajs)
        T = max(1, max((t.length for t in trajs), default=1))
        r = torch.zeros(B, T)
        mask = torch.zeros(B, T, dtype=torch.bool)
        ph = torch.zeros(B, T, dtype=torch.long)
        keys = []
        samples: list[Sample] = []
        for b, tr in enumerate(trajs):
            keys.append([(s.phash, s.ui_text) for s in tr.steps])
            for s in tr.steps:
                r[b, s.t] = s.reward
                mask[b, s.t] = True
                if s.phash is not None:
                    ph[b, s.t] = to_signed64(s.phash)
                if tr.valid and s.token_ids and s.logprobs is not None and s.prompt is not None:
                    samples.append(Sample(b, s.t, s.prompt, list(s.token_ids), list(s.logprobs)))
        return Batch(step_rewards=r,
                     terminal_rewards=torch.tensor([t.terminal_reward for t in trajs], dtype=torch.float32),
                     step_mask=mask, valid=torch.tensor([t.valid for t in trajs], dtype=torch.bool),
                     group_ids=torch.tensor([t.group for t in trajs], dtype=torch.long), phash=ph,
                     state_keys=build_state_keys(keys, num_steps=T), samples=samples)
