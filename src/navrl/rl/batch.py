"""From trajectories to padded tensors: the :class:`Batch` the update reads, and the PPO
:class:`Minibatch` es cut from it once per update."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from navrl.judge.verdicts import AskVerdict, StepVerdict
from navrl.rollout.records import Trajectory

_FAILED = frozenset({StepVerdict.FAIL.value, AskVerdict.UNJUSTIFIED.value})


def first_failed_step(traj: Trajectory) -> int:
    """Index of the first step the judge failed (as ``Batch.step_failed``); the length where none."""
    return next((s.t for s in traj.steps if s.verdict in _FAILED), len(traj.steps))


@dataclass
class Sample:
    """One planner output to train on: step ``t`` of trajectory ``b``."""
    b: int
    t: int
    prompt: str
    output_ids: list[int]
    old_logprobs: list[float]
    """The behaviour policy's log-probs of the output (what sampled it)."""
    policy_logprobs: list[float] | None = None
    """The planner's own, where exploration mixed other choices in (else None: the same)."""


@dataclass
class Batch:
    """Padded per-step tensors for B trajectories of at most T steps.

    step_rewards [B,T] dense rewards; terminal_rewards [B]; step_mask [B,T] bool real steps;
    valid [B] bool; group_ids [B] long; phash [B,T] long (0 where unknown);
    step_failed [B,T] bool: the step judge failed the step (verdict ``fail``, or an ask judged
    ``unjustified``); False on padding, successes and steps no judge scored (``Complete``);
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
    step_failed: torch.Tensor | None = None

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
        failed = torch.zeros(B, T, dtype=torch.bool)
        keys = []
        samples: list[Sample] = []
        for b, tr in enumerate(trajs):
            keys.append([(s.phash, s.ui_text) for s in tr.steps])
            for s in tr.steps:
                r[b, s.t] = s.reward
                mask[b, s.t] = True
                failed[b, s.t] = s.verdict in _FAILED
                if s.phash is not None:
                    ph[b, s.t] = to_signed64(s.phash)
                if tr.valid and s.token_ids and s.logprobs is not None and s.prompt is not None:
                    samples.append(Sample(b, s.t, s.prompt, list(s.token_ids), list(s.logprobs),
                                          None if s.policy_logprobs is None else list(s.policy_logprobs)))
        return Batch(step_rewards=r,
                     terminal_rewards=torch.tensor([t.terminal_reward for t in trajs], dtype=torch.float32),
                     step_mask=mask, valid=torch.tensor([t.valid for t in trajs], dtype=torch.bool),
                     group_ids=torch.tensor([t.group for t in trajs], dtype=torch.long), phash=ph,
                     state_keys=build_state_keys(keys, num_steps=T), samples=samples, step_failed=failed)


@dataclass
class Minibatch:
    """The PPO inputs of one minibatch, built once per update and read by every epoch.

    ``prompts`` / ``outputs``: the U distinct (prompt, output) pairs among the kept samples
    (sibling rollouts that reach the same state and choose the same output are scored once);
    ``rows`` long [n]: the pair of each kept sample, in minibatch order; ``old_logprobs``
    float [n, W]: the log-probs PPO's ratio is taken against (W = the longest output, zero
    padded): the behaviour policy's, or the planner's own at sampling (``policy.off_policy_ratio``);
    ``is_weight`` float [n, W] or None: the tokens' importance weights (``decoupled``);
    ``advantages`` float [n]; ``scale``: kept output tokens / the minibatch's output tokens
    (the token-mean denominator of the whole minibatch when zero advantages are left out);
    ``size``: samples in the minibatch before any was left out.
    """

    prompts: list[str]
    outputs: list[list[int]]
    rows: torch.Tensor
    old_logprobs: torch.Tensor
    advantages: torch.Tensor
    scale: float
    size: int
    is_weight: torch.Tensor | None = None

    @property
    def empty(self) -> bool:
        """No sample left to score (every advantage 0)."""
        return not self.prompts

    def old_width(self, L: int) -> torch.Tensor:
        """``old_logprobs`` cut or zero padded to L tokens: float [n, L]."""
        return _to_width(self.old_logprobs, L, 0.0)

    def weight_width(self, L: int) -> torch.Tensor | None:
        """``is_weight`` cut or padded with ones to L tokens: float [n, L], or None."""
        return None if self.is_weight is None else _to_width(self.is_weight, L, 1.0)


def _to_width(t: torch.Tensor, L: int, fill: float) -> torch.Tensor:
    """``t`` [n, W] cut to its first L columns, or padded with ``fill`` to L."""
    W = t.shape[1]
    return t[:, :L] if L <= W else torch.nn.functional.pad(t, (0, L - W), value=fill)


def length_chunks(samples: list[Sample], size: int) -> list[list[Sample]]:
    """Minibatches of similar prompt length (less padding), in a deterministic order."""
    order = sorted(samples, key=lambda s: (len(s.prompt), s.b, s.t))
    return [order[i:i + size] for i in range(0, len(order), size)]


def minibatches(samples: list[Sample], advantages: torch.Tensor, size: int, skip_zero: bool,
                ratio: str | None = None, cap: float | None = None) -> list[Minibatch]:
    """The update's minibatches (:func:`length_chunks` order) with their PPO inputs.

    ``advantages`` float [B, T]; ``skip_zero``: leave the samples whose advantage is exactly 0
    out (they add nothing to a clipped surrogate without KL or entropy terms); ``ratio``
    (``policy.off_policy_ratio``) and ``cap`` (``policy.is_weight_cap``): what PPO's ratio is
    taken against for a sample exploration mixed (one with ``policy_logprobs``) — the behaviour's
    log-probs (``behaviour``), or the planner's own (``proximal``; ``decoupled`` adds the
    importance weight min(cap, pi_old / mu) per token); None: ``PolicyConfig``'s defaults."""
    from navrl.rl.config import PolicyConfig
    ratio = PolicyConfig.off_policy_ratio if ratio is None else ratio
    cap = PolicyConfig.is_weight_cap if cap is None else cap
    out = []
    for chunk in length_chunks(samples, size):
        adv = advantages[torch.tensor([s.b for s in chunk], dtype=torch.long),
                         torch.tensor([s.t for s in chunk], dtype=torch.long)]
        kept, scale = chunk, 1.0
        if skip_zero:
            nz = (adv != 0).tolist()
            kept = [s for s, k in zip(chunk, nz) if k]
            adv = adv[torch.tensor(nz, dtype=torch.bool)]
            scale = sum(len(s.output_ids) for s in kept) / max(1, sum(len(s.output_ids) for s in chunk))
        pairs: dict[tuple[str, tuple[int, ...]], int] = {}
        rows = [pairs.setdefault((s.prompt, tuple(s.output_ids)), len(pairs)) for s in kept]
        W = max(1, max((len(s.old_logprobs) for s in kept), default=1))
        old = torch.zeros(len(kept), W)
        mixed = ratio != "behaviour" and any(s.policy_logprobs is not None for s in kept)
        weight = torch.ones(len(kept), W) if mixed and ratio == "decoupled" else None
        for i, s in enumerate(kept):
            mu = torch.tensor(s.old_logprobs)
            own = torch.tensor(s.policy_logprobs) if mixed and s.policy_logprobs is not None else None
            old[i, :len(mu)] = mu if own is None else own
            if weight is not None and own is not None:
                weight[i, :len(own)] = (own - mu).exp().clamp(max=cap)
        out.append(Minibatch(prompts=[p for p, _ in pairs], outputs=[list(o) for _, o in pairs],
                             rows=torch.tensor(rows, dtype=torch.long), old_logprobs=old, advantages=adv,
                             scale=scale, size=len(chunk), is_weight=weight))
    return out
