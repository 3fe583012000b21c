"""Adaptive entropy control per decision factor (Skywork-OR1's adaptive entropy coefficient,
He et al. 2025, applied to each factor of a pointer decision).

A fixed entropy bonus is either too weak to stop a factor from collapsing or strong enough to
keep every factor noisy. Here each factor f (``kind``, ``node``, ``text``) has a target
entropy H*_f in nats and a coefficient a_f in [0, 1], moved once per update from the entropy
measured on that update's rollouts (the trainer's diagnostics, before the update):
a_f += rate if H_f < H*_f else -rate, clipped to [0, 1]. The bonus applies only while the
factor is below its target (a_f x 1[H_f < H*_f]), so a factor above its target is left alone
and its coefficient decays. The loss subtracts ``exploration.entropy_control`` x the token mean
of a_f x H at each decided position of factor f (:func:`navrl.rl.losses.factor_entropy_bonus`).
A target of 0 turns a factor's control off."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

FACTORS = ("kind", "node", "text")
"""The controlled decision factors, as :meth:`~navrl.agent.policy.base.Policy.decision_factors` names them."""


class EntropyController:
    """Coefficients a_f in [0, 1] of the per-factor entropy bonus, moved toward keeping each
    factor's measured entropy at its target."""

    def __init__(self, targets: Mapping[str, float], rate: float):
        unknown = sorted(set(targets) - set(FACTORS))
        if unknown:
            raise ValueError(f"unknown decision factor(s) {unknown}; controlled: {FACTORS}")
        if not rate > 0:
            raise ValueError(f"the controller's rate must be > 0, got {rate}")
        self.targets = {f: float(targets.get(f, 0.0)) for f in FACTORS}
        self.rate = float(rate)
        self.coef = {f: 0.0 for f in FACTORS}
        """a_f: the coefficient's state, in [0, 1]."""
        self.active = {f: False for f in FACTORS}
        """Whether the last measured entropy of f was below its target (the bonus applies)."""

    def observe(self, entropy: Mapping[str, float | None]) -> dict[str, float]:
        """Move each controlled factor's coefficient from its measured mean entropy (nats;
        a factor not measured this update keeps its state). Returns the weights in use, a_f
        where the factor is below its target and 0 elsewhere (:meth:`weights`)."""
        for f, target in self.targets.items():
            h = entropy.get(f)
            if target <= 0 or h is None:
                continue
            below = h < target
            self.active[f] = below
            self.coef[f] = min(1.0, max(0.0, self.coef[f] + (self.rate if below else -self.rate)))
        return self.weights()

    def weights(self) -> dict[str, float]:
        """factor -> the weight of its entropy bonus now: a_f while it is below its target, else 0."""
        return {f: (self.coef[f] if self.active[f] else 0.0) for f in FACTORS}

    def state(self) -> dict:
        return {"coef": dict(self.coef), "active": dict(self.active)}

    def load(self, st: Mapping) -> None:
        self.coef.update({f: float(v) for f, v in st.get("coef", {}).items() if f in self.coef})
        self.active.update({f: bool(v) for f, v in st.get("active", {}).items() if f in self.active})


def factor_weights(factors: Sequence[Sequence[str]], weights: Mapping[str, float], width: int) -> torch.Tensor:
    """float [N, width]: the weight of the factor each position of each sample stands for
    (``factors``: N rows of position names, as ``Policy.decision_factors`` gives them); 0 for
    positions of other names."""
    return torch.tensor([[float(weights.get(name, 0.0)) for name in list(row)[:width]]
                         + [0.0] * max(0, width - len(row)) for row in factors], dtype=torch.float32).reshape(-1, width)
