"""Ablation plugin for ``reduce.py --plugin no_used_apps``: the planner's contexts carry no used
apps (``PlannerContext.apps`` empty, so prompts have no ``"u"`` and the pointer planner's used-app
node column stays 0); everything else — the episode memory of every earlier app included — is
unchanged. (Patching ``Episode.used_apps`` instead would also empty the memory, which reads it.)"""
import navrl.rollout.runner as _runner
from navrl.agent.planner import PlannerContext


def _without_apps(*args, **kwargs) -> PlannerContext:
    ctx = PlannerContext(*args, **kwargs)
    ctx.apps = ()
    return ctx


_runner.PlannerContext = _without_apps   # the runner builds every rollout's contexts with this name
