"""navrl: online dense RL for planner-grounder UI agents."""
__version__ = "0.1.0"
