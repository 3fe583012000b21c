"""Gymnasium environments. ``import navrl`` registers ``navrl/PhoneWorld-v0``."""
from __future__ import annotations

import gymnasium as gym

ENV_ID = "navrl/PhoneWorld-v0"


def register() -> None:
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="navrl.envs.phone_world:PhoneWorldEnv")
