"""Supervised fine-tuning's settings (:class:`SFTConfig`), apart from its torch code so that
reading a preset does not import torch."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SFTConfig:
    n_tasks: int = 400
    """Demonstration episodes (clean single-app train tasks)."""
    epochs: int = 4
    """Passes over the demonstrations."""
    lr: float = 2e-3
    """Peak AdamW learning rate (cosine decay, short linear warm-up)."""
    batch_size: int = 32
    """Demonstration steps per optimiser step (batches are length-bucketed)."""
    heldout_frac: float = 0.1
    """Share of demonstration steps kept out of training to measure held-out loss."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    seed: int = 0
    """Seed of the task selection and the batch order."""
    balance_kinds: float = 0.0
    """Weight each demonstration step by (frequency of its Step kind)^-balance_kinds (mean weight
    1): 0 is plain SFT; 0.5 lets rare decisions (asking the user: ~1.5% of steps) count without
    drowning the common ones."""
    augment: float = 0.0
    """Share of demonstration steps shown in a randomised form each epoch (the policy's
    ``augment_prompt``: for the pointer planner, distractor nodes and other screen geometry,
    so that what it learns carries to another platform's chrome); 0 is plain SFT."""

    def validate(self) -> "SFTConfig":
        from navrl.rl.config import ConfigError
        if self.n_tasks < 2 or self.epochs < 1 or self.batch_size < 1 or self.lr <= 0:
            raise ConfigError(f"invalid SFT config {self}")
        if not 0.0 <= self.augment <= 1.0:
            raise ConfigError(f"augment must be in [0, 1], got {self.augment}")
        if not 0.0 < self.heldout_frac < 1.0:
            raise ConfigError(f"heldout_frac must be in (0, 1), got {self.heldout_frac}")
        return self


@dataclass
class DAggerConfig:
    """DAgger after BC (:mod:`navrl.rl.dagger`): the cloned planner plays, the expert labels the
    screens it reaches, and BC trains again on every label so far."""
    rounds: int = 0
    """Rounds of (play, label, train again); 0 is plain BC."""
    episodes_per_task: int = 10
    """Fresh instances per task the cloned planner plays in each round."""
    expert_share: float = 0.0
    """DAgger's beta: the share of steps the expert, not the planner, takes while playing (0: the
    planner plays every step, so the data show exactly the screens its own errors lead to)."""

    def validate(self) -> "DAggerConfig":
        from navrl.rl.config import ConfigError
        if self.rounds < 0 or self.episodes_per_task < 1:
            raise ConfigError(f"dagger: rounds must be >= 0 and episodes_per_task >= 1, got {self}")
        if not 0.0 <= self.expert_share <= 1.0:
            raise ConfigError(f"dagger: expert_share must be in [0, 1], got {self.expert_share}")
        return self
