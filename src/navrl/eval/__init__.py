"""Evaluation entry points (the machinery lives in :mod:`navrl.rollout.evaluate`)."""
from navrl.rollout.evaluate import EvalResult, evaluate, summarize, wilson_interval

__all__ = ["EvalResult", "evaluate", "summarize", "wilson_interval"]
