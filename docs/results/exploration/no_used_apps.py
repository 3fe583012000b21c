"""Ablation plugin for ``reduce.py --plugin no_used_apps``: the runner passes no used apps
(``PlannerContext.apps`` empty, so prompts carry no ``"u"`` and the pointer planner's used-app
node column stays 0); everything else, the memory of every earlier app included, unchanged."""
from navrl.rollout.episode import Episode

Episode.used_apps = lambda self: ()   # type: ignore[method-assign]
