"""Evaluation entry points (the machinery lives in :mod:`navrl.rollout.evaluate`)."""
from navrl.rollout.evaluate import EvalResult, difference_interval, evaluate, summarize, wilson_interval

__all__ = ["EvalResult", "difference_interval", "evaluate", "summarize", "wilson_interval"]
