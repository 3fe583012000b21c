"""Names of the advantage estimators (no torch import, so the config stays light).

The registry that maps these names to functions lives in :mod:`navrl.rl.advantages`;
this module only fixes the vocabulary shared by the config, the trainer and the CLI.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["AdvantageEstimator"]


class AdvantageEstimator(str, Enum):
    """Built-in advantage estimators (DESIGN.md §5).

    The value is the string used in configs and on the command line.
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
        """True for the estimators whose advantage is G - V (they need critic values)."""
        return self in (
            AdvantageEstimator.PPO,
            AdvantageEstimator.PPO_TERMINAL_ONLY,
            AdvantageEstimator.GIGPPO,
        )

    def __str__(self) -> str:  # "ppo", not "AdvantageEstimator.PPO", in logs and f-strings
        return self.value
