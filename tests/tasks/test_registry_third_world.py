"""A third world registered from outside navrl: its suite shows up in ``navrl tasks``, runs
under ``navrl eval`` and trains under ``navrl train`` by registration alone (no CLI change)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import pytest

from navrl.actions import Action, ActionKind
from navrl.cli.main import main
from navrl.device.base import ActResult, Device, Health
from navrl.judge.base import AskJudge, Judgement, StepJudge, TerminalJudge
from navrl.judge.verdicts import AskVerdict, StepVerdict, TerminalVerdict
from navrl.observation import Observation, UINode
from navrl.tasks import registry
from navrl.tasks.registry import Suite, SuiteOptions
from navrl.tasks.task import Family, Task

LIGHTS = 3


class Lights(Device):
    """Three lights with a switch each; a tap on a switch turns its light on."""

    platform = "lights"

    def __init__(self) -> None:
        self.on = [False] * LIGHTS

    def observe(self) -> Observation:
        nodes = tuple(UINode(f"l{i}", "button", f"Light {i + 1}", (10, 60 * i + 10, 200, 60 * i + 50),
                             value="on" if self.on[i] else "off", actions=("tap",)) for i in range(LIGHTS))
        return Observation(nodes, "Lights", (210, 200), "lights")

    def act(self, action: Action) -> ActResult:
        if action.kind is ActionKind.TAP and action.y is not None:
            i = (action.y - 10) // 60
            if 0 <= i < LIGHTS and not self.on[i]:
                self.on[i] = True
                return ActResult(True)
        return ActResult(False)

    def snapshot(self) -> object:
        return list(self.on)

    def restore(self, snapshot: object) -> None:
        self.on = list(snapshot)  # type: ignore[arg-type]

    def health(self) -> Health:
        return Health(True)


@dataclass(frozen=True)
class LightTask:
    """Turn on light ``k`` and say so; the expert taps it, then completes."""

    k: int
    seed: int
    suite: str = "toy-lights"
    template: str = "turn_on"
    skin: str = "lights"
    layout: str = "default"
    family: Family = Family.SINGLE
    max_steps: int = 4
    profile: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def id(self) -> str:
        return f"{self.suite}:{self.template}:{self.seed}"

    @property
    def goal(self) -> str:
        return f"Turn on Light {self.k + 1}"

    @property
    def apps(self) -> tuple[str, ...]:
        return ("Lights",)

    def make_device(self) -> Lights:
        return Lights()

    def expert_step(self, obs, device, answers) -> str:
        lit = any(n.label == f"Light {self.k + 1}" and n.value == "on" for n in obs.nodes)
        step = "Complete" if lit else f'Tap "Light {self.k + 1}"'
        return f"Reasoning: the goal names Light {self.k + 1}.\nStep: {step}\nRemaining: nothing"

    def with_(self, **kw) -> "LightTask":
        return replace(self, **kw)

    def to_dict(self) -> dict:
        return {"id": self.id, "template": self.template, "seed": self.seed, "suite": self.suite, "goal": self.goal,
                "apps": list(self.apps), "family": self.family.value, "max_steps": self.max_steps}


def _lit(obs: Observation | None, k: int) -> bool:
    return obs is not None and any(n.label == f"Light {k + 1}" and n.value == "on" for n in obs.nodes)


class LightJudge(StepJudge, AskJudge, TerminalJudge):
    def judge_step(self, ctx) -> Judgement:
        return Judgement(StepVerdict.SUCCESS if _lit(ctx.after, ctx.task.k) and not _lit(ctx.before, ctx.task.k)
                         else StepVerdict.FAIL)

    def judge_ask(self, ctx) -> Judgement:
        return Judgement(AskVerdict.UNJUSTIFIED)

    def judge_terminal(self, ctx) -> Judgement:
        ok = ctx.end.value == "complete" and _lit(ctx.last_screens[-1] if ctx.last_screens else None, ctx.task.k)
        return Judgement(TerminalVerdict.SUCCESS if ok else TerminalVerdict.FAIL)


class LightSuite(Suite):
    name = "toy-lights"
    world = "toy"
    summary = "a third world: turn on the named light"
    devices = ("phone",)          # in-process devices built by the tasks
    judges = ("lights",)

    def tasks(self, n, seed, options=SuiteOptions()) -> list:
        n = 6 if n is None else n
        return [LightTask(k=(seed + i) % LIGHTS, seed=1000 * seed + i) for i in range(n)]

    def describe(self) -> list[dict[str, str]]:
        return [{"template": "turn_on", "goal": "Turn on Light K"}]


@pytest.fixture
def toy_world():
    registry.register_suite(LightSuite())
    registry.register_judges("lights", lambda **_: (LightJudge(),) * 3)
    yield
    registry._SUITES.pop("toy-lights", None)
    registry._JUDGES.pop("lights", None)


def test_the_toy_tasks_satisfy_the_task_protocol():
    t = LightSuite().tasks(1, 0)[0]
    assert isinstance(t, Task)


def test_a_registered_suite_is_listed_by_navrl_tasks(toy_world, capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert "toy-lights" in out and "toy" in out and "train" in out and "miniwob" in out
    assert main(["tasks", "--suite", "toy-lights"]) == 0
    assert "Turn on Light K" in capsys.readouterr().out


def test_a_registered_suite_runs_under_navrl_eval(toy_world, tmp_path, capsys):
    rc = main(["eval", "--suite", "toy-lights", "--agent", "expert", "-n", "4", "--out", str(tmp_path / "e")])
    assert rc == 0
    res = json.loads((tmp_path / "e" / "results.json").read_text())
    assert res["n"] == 4 and res["successes"] == 4 and res["masked"] == 0
    assert "toy-lights" in capsys.readouterr().out
    rc = main(["eval", "--suite", "toy-lights", "--agent", "random", "-n", "4", "--out", str(tmp_path / "r")])
    assert rc == 0 and json.loads((tmp_path / "r" / "results.json").read_text())["successes"] < 4


def test_a_registered_suite_refuses_a_judge_it_does_not_take(toy_world, tmp_path, capsys):
    rc = main(["eval", "--suite", "toy-lights", "--judge", "oracle", "-n", "2", "--out", str(tmp_path / "e")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--judge lights" in err[0]


def test_a_registered_suite_trains_under_navrl_train(toy_world, tmp_path, capsys):
    from navrl.experiments.pipeline import build_policy, save_policy
    from navrl.rl.presets import get_preset
    init = save_policy(build_policy(get_preset("quick-pointer"), 0), tmp_path / "init.pt", {"stage": "init"})
    run = tmp_path / "run"
    rc = main(["train", "--preset", "quick-pointer", "--init", str(init), "--suite", "toy-lights", "--out", str(run),
               "--updates", "1",
               "--set", "rollout.tasks_per_update=2", "--set", "rollout.rollouts_per_task=2",
               "--set", "policy.sft_coef=0",
               "--set", "run.eval_episodes=2"])
    assert rc == 0, capsys.readouterr().err
    assert json.loads((run / "parts.json").read_text()) == {
        "suite": "toy-lights", "tasks": None, "judge": "lights", "devices": "phone",
        "preset": "quick-pointer", "sft_demo_tasks": None}
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    updates = [r for r in rows if r.get("kind") == "update"]
    assert len(updates) == 1 and updates[0]["masked"] == 0 and updates[0]["samples"] > 0
    (ev,) = [r for r in rows if r.get("kind") == "eval"]
    assert ev["toy-lights"]["n"] == 2 and ev["toy-lights"]["masked"] == 0
