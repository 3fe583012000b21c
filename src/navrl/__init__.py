"""navrl: online dense RL for planner-grounder UI agents on live devices."""
__version__ = "0.1.0"


def _register_envs() -> None:
    try:
        from navrl.envs import register
    except ImportError:  # gymnasium missing: the rest of navrl still works
        return
    register()


_register_envs()
