"""Evaluation entry points (the machinery lives in :mod:`navrl.rollout.evaluate`)."""
from navrl.rollout.evaluate import (EvalAborted, EvalResult, difference_interval, evaluate, paired_counts,
                                    paired_difference_interval, paired_gain_interval, summarize, wilson_interval)

__all__ = ["EvalAborted", "EvalResult", "difference_interval", "evaluate", "paired_counts",
           "paired_difference_interval", "paired_gain_interval", "summarize", "wilson_interval"]
