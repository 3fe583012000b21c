"""navrl: online dense RL for planner-grounder UI agents on live devices."""
import _navrl_gymnasium

__version__ = "0.1.0"

PHONE_WORLD_ENV = _navrl_gymnasium.PHONE_WORLD_ENV
"""The phone world's Gymnasium id (:class:`navrl.worlds.phone.env.PhoneWorldEnv`)."""


def register_envs() -> None:
    """Register navrl's Gymnasium ids by name only: the world is imported on ``gymnasium.make``.

    Installed navrl needs no call: ``_navrl_gymnasium.pth`` registers them whenever gymnasium is
    imported, so ``gymnasium.make("navrl/PhoneWorld-v0", task="shop_checkout:3")`` works in a
    fresh interpreter (src/_navrl_gymnasium.py); the constructor's arguments are
    :class:`navrl.worlds.phone.env.PhoneWorldEnv`'s. This runs on ``import navrl`` too (for a
    source tree on ``sys.path`` without the install) and is the ``gymnasium.envs`` entry point
    (pyproject.toml) for loaders that read that group. An id already registered is left as is."""
    try:
        import gymnasium as gym
    except ImportError:  # gymnasium missing: the rest of navrl still works
        return
    _navrl_gymnasium.register(gym)


_register_envs = register_envs   # the earlier name
register_envs()
