"""APIPlanner (prompt, screenshot, usage, from_env, the runner) and LLMUser."""
from __future__ import annotations

import pytest

from navrl.agent.api_planner import APIPlanner, APIPlannerConfig
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.plan import Plan, parse_plan
from navrl.agent.planner import PlannerContext
from navrl.agent.prompt import SYSTEM
from navrl.api import APIUnavailable, PriceTable
from navrl.device.base import DeviceError
from navrl.worlds.phone.sim import PerturbConfig
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner
from navrl.tasks.llm_user import LLMUser
from navrl.worlds.phone.task import make_task
from navrl.tasks.user import UNKNOWN
from fake_api import KEY_ENV, reply, request_images, request_text, status


@pytest.fixture
def task():
    return make_task("settings_toggle", 2, perturb=PerturbConfig.off())


def test_api_planner_output_parses_and_records_usage(fake_server, make_client, task):
    obs = task.make_device().observe()
    fake_server.push(reply('Reasoning: The Settings icon is on the home screen.\nStep: Tap "Settings"\n'
                           "Remaining: toggle the switch", 1200, 40))
    p = APIPlanner(make_client(prices=PriceTable({"test-model": (1.0, 2.0)})))
    ctx = PlannerContext(task, obs, history=[("start", "Go home")], remaining="open settings",
                         answers=[("Which?", "Wi-Fi")])
    [out] = p.plan([ctx])
    plan = parse_plan(out.text)
    assert isinstance(plan, Plan) and plan.step == 'Tap "Settings"'
    assert out.usage == {"prompt_tokens": 1200, "completion_tokens": 40, "cost": pytest.approx((1200 + 80) / 1e6)}
    body = fake_server.chat_requests[0]["body"]
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}
    text = request_text(body)
    assert out.prompt and out.prompt in text and task.goal in text
    assert "Q: Which? A: Wi-Fi" in text and "Remaining plan: open settings" in text and "Go home" in text
    assert len(request_images(body)) == 1


def test_api_planner_batch_keeps_order_and_text_only_mode(fake_server, make_client, task):
    obs = task.make_device().observe()
    ctxs = [PlannerContext(task.with_(goal=f"goal number {i}"), obs) for i in range(6)]

    def respond(req):
        goal = next(line for line in request_text(req).split("\n") if line.startswith("Task:"))
        return reply(f'Reasoning: r\nStep: Tap "{goal[-1]}"\nRemaining: -')
    fake_server.responder = respond
    outs = APIPlanner(make_client(), APIPlannerConfig(workers=3, send_screenshot=False)).plan(ctxs)
    assert [parse_plan(o.text).step for o in outs] == [f'Tap "{i}"' for i in range(6)]
    assert all(not request_images(r["body"]) for r in fake_server.chat_requests)


def test_api_planner_from_env(fake_server, monkeypatch, api_key):
    for k in ("NAVRL_API_BASE", "NAVRL_API_MODEL", "NAVRL_API_KEY_ENV"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(ValueError, match="NAVRL_API_BASE"):
        APIPlanner.from_env()
    monkeypatch.setenv("NAVRL_API_BASE", fake_server.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "env-model")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", KEY_ENV)
    p = APIPlanner.from_env(max_side=100, timeout=3.0)
    assert p.client.config.model == "env-model" and p.client.config.timeout == 3.0 and p.cfg.max_side == 100
    with pytest.raises(ValueError, match="unknown"):
        APIPlanner.from_env(nonsense=1)
    from navrl.cli.common import CLIError, make_planner
    assert isinstance(make_planner("api"), APIPlanner)
    monkeypatch.delenv("NAVRL_API_MODEL")
    with pytest.raises(CLIError, match="NAVRL_API_MODEL"):
        make_planner("api")


def test_api_planner_in_the_runner(fake_server, make_client, task):
    """Unparseable output is the agent's (−1); an outage is not turned into a plan."""
    fake_server.push(reply("I am not sure what to do."), reply('Reasoning: x\nStep: Complete\nRemaining: none'))
    j = OracleJudge()
    runner = EpisodeRunner(APIPlanner(make_client()), AccessibilityGrounder(), j, j, j)
    [tr] = runner.run([task])
    assert tr.steps[0].kind == "unparseable" and tr.steps[0].reward == -1.0
    assert tr.steps[0].usage["prompt_tokens"] == 100 and tr.end == "complete"
    fake_server.default = status(500)
    # an outage is infrastructure: the episode is masked, never charged as the agent's output
    [bad] = EpisodeRunner(APIPlanner(make_client(max_retries=1)), AccessibilityGrounder(), j, j, j).run([task])
    assert not bad.valid and bad.invalid_reason == "planner_unavailable" and bad.total_reward == 0.0


def test_llm_user_answers_from_profile(fake_server, make_client):
    t = make_task("shop_ask_size", 1, perturb=PerturbConfig.off())
    assert t.profile
    key, value = next(iter(t.profile.items()))
    fake_server.push(reply(f' "{value}" '), reply("I don't know."), reply("I don\u2019t know that, sorry"),
                     reply(""), reply("Unknown."))
    u = LLMUser(make_client())
    assert u.answer(t, f"What is your {key}?") == str(value)
    text = request_text(fake_server.chat_requests[0]["body"])
    assert f"- {key}: {value}" in text and t.goal in text and f"What is your {key}?" in text
    assert "I don't know." in fake_server.chat_requests[0]["body"]["messages"][0]["content"]
    for q in ("What is your favourite colour?", "a", "b", "c"):
        assert u.answer(t, q) == UNKNOWN


def test_llm_user_outage_is_infrastructure(fake_server, make_client):
    t = make_task("shop_ask_size", 1, perturb=PerturbConfig.off())
    fake_server.default = status(502)
    with pytest.raises(DeviceError) as ei:
        LLMUser(make_client(max_retries=1)).answer(t, "size?")
    assert ei.value.reason == "user_unavailable"


def test_llm_user_in_the_runner(fake_server, make_client):
    t = make_task("shop_ask_size", 1, perturb=PerturbConfig.off())
    from navrl.agent.planner import ExpertPlanner
    fake_server.responder = lambda req: reply(str(next(iter(t.profile.values()))))
    j = OracleJudge()
    [tr] = EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), j, j, j, user=LLMUser(make_client())).run([t])
    asks = [s for s in tr.steps if s.kind == "ask_user"]
    assert asks and asks[0].user_answer == str(next(iter(t.profile.values())))
    assert tr.valid and tr.success
    fake_server.responder = None
    fake_server.default = status(500)
    [tr2] = EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), j, j, j,
                          user=LLMUser(make_client(max_retries=0))).run([t])
    assert not tr2.valid and tr2.invalid_reason == "user_unavailable" and tr2.total_reward == 0.0


def test_navrl_eval_with_the_api_agent(fake_server, monkeypatch, api_key, tmp_path, capsys):
    from navrl.cli.main import main
    monkeypatch.setenv("NAVRL_API_BASE", fake_server.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "planner")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", KEY_ENV)
    monkeypatch.delenv("NAVRL_API_CACHE", raising=False)
    monkeypatch.delenv("NAVRL_API_PRICES", raising=False)
    fake_server.default = reply("Reasoning: nothing to do\nStep: Complete\nRemaining: none")
    out = tmp_path / "ev"
    assert main(["eval", "--agent", "api", "--suite", "test-ios", "-n", "2", "--out", str(out)]) == 0
    assert (out / "trajectories.jsonl").exists() and len(fake_server.chat_requests) == 2
    monkeypatch.delenv("NAVRL_API_BASE")
    assert main(["eval", "--agent", "api", "-n", "1", "--out", str(out)]) == 2
    assert "NAVRL_API_BASE" in capsys.readouterr().err
