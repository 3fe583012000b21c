"""navrl: online dense RL for planner-grounder UI agents on live devices."""
__version__ = "0.1.0"

PHONE_WORLD_ENV = "navrl/PhoneWorld-v0"
"""The phone world's Gymnasium id (:class:`navrl.worlds.phone.env.PhoneWorldEnv`)."""


def register_envs() -> None:
    """Register the Gymnasium id by name only: the world is imported on ``gymnasium.make``.

    Runs on ``import navrl``. In a fresh interpreter, ``gymnasium.make("navrl:navrl/PhoneWorld-v0",
    task="shop_checkout:3")`` imports navrl itself (Gymnasium's ``module:id`` form); the
    constructor's arguments are :class:`navrl.worlds.phone.env.PhoneWorldEnv`'s. It is also
    the ``gymnasium.envs`` entry point (pyproject.toml) for loaders that read that group."""
    try:
        import gymnasium as gym
    except ImportError:  # gymnasium missing: the rest of navrl still works
        return
    if PHONE_WORLD_ENV not in gym.registry:
        gym.register(id=PHONE_WORLD_ENV, entry_point="navrl.worlds.phone.env:PhoneWorldEnv")


_register_envs = register_envs   # the earlier name
register_envs()
