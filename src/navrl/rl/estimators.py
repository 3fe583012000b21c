"""Names of the built-in advantage estimators (no torch import, so the config stays light).

The registry that maps names to functions and to what the trainer must provide (critic,
screenshot hashes, sibling rollouts) lives in :mod:`navrl.rl.advantages`; it is the only
list of estimators and of their properties. This module only fixes the built-in names.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["AdvantageEstimator"]


class AdvantageEstimator(str, Enum):
    """Built-in advantage estimators (docs/design.md §5a).

    The value is the string used in configs and on the command line. Estimators registered
    with :func:`navrl.rl.advantages.register_estimator` under other names are plain strings.
    """

    PPO = "ppo"
    """A = G - V(s), lambda = 1, whitened over valid steps; V from the LM value head."""

    PPO_TERMINAL_ONLY = "ppo_terminal_only"
    """As ``ppo`` with every dense step reward set to 0 (only the terminal reward)."""

    GIGPPO = "gigppo"
    """As ``ppo``; V comes from the GiGPPO critic that also sees the nearest sibling state."""

    GRPO = "grpo"
    """Group-relative score of the whole trajectory, broadcast to every valid step; no critic."""

    GIGPO = "gigpo"
    """GRPO episode advantage + w * anchor-state step advantage (identical states); no critic."""

    @property
    def uses_critic(self) -> bool:
        """True for the estimators whose advantage is G - V (read from the registry's spec)."""
        from navrl.rl.advantages import estimator_spec  # the registry needs torch; names do not

        return estimator_spec(self).uses_critic

    def __str__(self) -> str:  # "ppo", not "AdvantageEstimator.PPO", in logs and f-strings
        return self.value
