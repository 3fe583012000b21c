"""Evaluation: run a planner on a suite (:mod:`~navrl.eval.run`), what it measured
(:mod:`~navrl.eval.result`) and intervals for rates and paired gains (:mod:`~navrl.eval.intervals`).
The phone world's SFT-vs-RL breakdown by family and perturbation is its ``breakdown`` hook."""
from navrl.eval.intervals import difference_interval, paired_counts, paired_difference_interval, wilson_interval
from navrl.eval.result import EvalAborted, EvalResult, failures_fixed, paired_gain_interval, summarize
from navrl.eval.run import evaluate, evaluate_trainer, evaluation_plan

__all__ = ["EvalAborted", "EvalResult", "difference_interval", "evaluate", "evaluate_trainer", "evaluation_plan", "failures_fixed",
           "paired_counts",
           "paired_difference_interval", "paired_gain_interval", "summarize", "wilson_interval"]
