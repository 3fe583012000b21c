"""DAgger (Ross, Gordon & Bagnell 2011): the cloned planner plays, the expert labels every screen
it reaches, and the planner is trained again on all labels so far.

Why: behaviour cloning sees only the screens the expert's own episodes pass through. A cloned
planner that errs once on a ~17-step page (sign-agreement, the email inboxes) is on a screen no
demonstration showed, and the errors compound: on MiniWoB++ the all-task BC planner follows the
scripts on 9 of 12 of its *training* instances of email-inbox-nl-turk and on 4 of 10 fresh ones
(docs/results/miniwob/all/rerun_5495b46.md). DAgger puts the learner's own screens, with the
expert's step on each, into the data. It needs an expert that can be asked on any screen: the
phone world's expert reads the device, and MiniWoB++'s scripted solutions read the observation
(a script that has no answer on a screen off its path raises; that screen is left unlabelled
and counted, never guessed).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.plan import parse_plan
from navrl.agent.planner import ExpertPlanner, Planner, PlannerContext, PlannerOutput
from navrl.agent.policy.base import Policy, greedy
from navrl.rollout.runner import EpisodeRunner
from navrl.rl.sft import Demo, Teacher, TemplateTeacher

__all__ = ["Corrections", "collect_corrections"]


@dataclass
class Corrections:
    """What one DAgger collection gathered."""
    steps: list[tuple[str, Demo]] = field(default_factory=list)
    """(task id, demonstration): the learner's prompt on each screen it reached, the expert's step as target."""
    episodes: int = 0
    """Episodes played (valid ones: infrastructure failures are masked and counted apart)."""
    successes: int = 0
    """Of those, how many the learner (with any expert steps mixed in) finished: its on-policy success."""
    masked: int = 0
    """Episodes lost to the infrastructure (their screens are not used)."""
    unlabelled: int = 0
    """Screens on which the expert had no step (a script off its path): not trained on."""
    disagreements: int = 0
    """Labelled screens on which the learner's step differed from the expert's."""


class _Corrector(Planner):
    """Plays the learner (or, with probability ``expert_share``, the expert) and records the
    expert's step on every screen, as the teacher's target for the learner's own prompt."""

    name = "dagger"

    def __init__(self, policy: Policy, learner: Planner, expert: Planner, teacher: Teacher,
                 expert_share: float, seed: int):
        self.policy, self.learner, self.expert, self.teacher = policy, learner, expert, teacher
        self.expert_share, self.seed = expert_share, seed
        self.labels: list[tuple[str, Demo]] = []
        self.unlabelled = self.disagreements = 0

    def _expert_step(self, c: PlannerContext) -> PlannerOutput | None:
        try:
            return self.expert.plan([c])[0]
        except Exception:  # noqa: BLE001 — a script off its own path: no label here (counted), the episode goes on
            return None

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        outs = []
        for c, mine in zip(contexts, self.learner.plan(contexts)):
            e = self._expert_step(c)
            if e is None:
                self.unlabelled += 1
                outs.append(mine)
                continue
            prompt = self.policy.prompt_text(c)
            target = self.teacher.fill(prompt, e.text)
            self.labels.append((c.task.id, Demo(prompt, target)))
            ours, theirs = parse_plan(mine.text), parse_plan(target)
            self.disagreements += (ours.step if ours else None) != (theirs.step if theirs else None)
            # which one acts is fixed by (seed, task id, step index), whatever the batching
            rng = random.Random(f"{self.seed}|{c.task.id}|{len(c.history)}")
            outs.append(PlannerOutput(target, prompt=e.prompt) if rng.random() < self.expert_share else mine)
        return outs


def collect_corrections(policy: Policy, tasks: list, *, judges, devices=None, learner: Planner | None = None,
                        expert: Planner | None = None, teacher: Teacher | None = None,
                        expert_share: float = 0.0, seed: int = 0) -> Corrections:
    """One DAgger collection: ``learner`` (default: ``policy`` decoding greedily, as it is
    evaluated) plays ``tasks`` on ``devices``, judged by ``judges``; each screen it reaches
    becomes (``policy``'s prompt, ``teacher``'s target around ``expert``'s step). With
    ``expert_share`` > 0 that share of steps is the expert's (DAgger's β). Screens of episodes
    the infrastructure lost are dropped (counted in ``masked``)."""
    if not 0.0 <= expert_share <= 1.0:
        raise ValueError(f"expert_share must be in [0, 1], got {expert_share}")
    rec = _Corrector(policy, learner or greedy(policy), expert or ExpertPlanner(),
                     teacher or TemplateTeacher(compact=True), expert_share, seed)
    runner = EpisodeRunner(rec, AccessibilityGrounder(), *judges[:3])
    trajs = runner.run(list(tasks), devices=devices)
    lost = {t.task.get("id") for t in trajs if not t.valid}
    valid = [t for t in trajs if t.valid]
    return Corrections(steps=[(tid, d) for tid, d in rec.labels if tid not in lost], episodes=len(valid),
                       successes=sum(t.success for t in valid), masked=len(trajs) - len(valid),
                       unlabelled=rec.unlabelled, disagreements=rec.disagreements)
