"""LLM judges against the fake server: every verdict, prompts, malformed JSON, unavailability, the runner."""
from __future__ import annotations

import json

import pytest

from navrl.actions import Action
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.plan import Plan
from navrl.agent.planner import ExpertPlanner
from navrl.api import APIConfig, APIRequestError, ChatClient
from navrl.worlds.phone.sim import PerturbConfig
from navrl.judge.base import JudgeUnavailable, PastStep, StepContext, TerminalContext
from navrl.judge.llm import (LLMAskJudge, LLMJudgeConfig, LLMStepJudge, LLMTerminalJudge, llm_judges,
                             verdict_validator)
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.rollout.runner import EpisodeRunner, ui_hash
from navrl.worlds.phone.expert import Memory
from navrl.worlds.phone.task import make_task
from fake_api import KEY_ENV, FakeChatServer, reply, request_images, request_text, status


def V(verdict, reason="because"):
    return reply(json.dumps({"verdict": verdict, "reason": reason}))


@pytest.fixture
def world():
    task = make_task("settings_toggle", 3, perturb=PerturbConfig.off())
    dev = task.make_device()
    before = dev.observe()
    label = next(n.label for n in before.nodes if n.label and "tap" in n.actions)
    x, y = next(n.center for n in before.nodes if n.label == label)
    dev.act(Action.tap(x, y))
    after = dev.observe()
    return task, before, after, label, Action.tap(x, y)


def step_ctx(world, history=(), qa=(), action="tap"):
    task, before, after, label, tap = world
    act = {"tap": tap, "none": None, "ask": Action.ask_user("Which setting?")}[action]
    plan = Plan(f'I see "{label}" on the home screen.', f'Tap "{label}"', "toggle the setting")
    return StepContext(task, before, after, plan, act, list(history), Memory(list(qa)), ui_hash(before))


@pytest.mark.parametrize("raw,want", [("success", StepVerdict.SUCCESS), ("fail", StepVerdict.FAIL),
                                      ("overcomplete", StepVerdict.OVERCOMPLETE), ("SUCCESS", StepVerdict.SUCCESS),
                                      (" Fail ", StepVerdict.FAIL)])
def test_step_judge_verdicts(fake_server, make_client, world, raw, want):
    fake_server.push(V(raw, "progress seen"))
    j = LLMStepJudge(make_client()).judge_step(step_ctx(world))
    assert j.verdict is want and j.reason == "progress seen"
    assert j.info["usage"]["prompt_tokens"] == 100 and j.info["cached"] is False


def test_step_judge_prompt_has_screens_plan_reasoning_history(fake_server, make_client, world):
    task, before, *_ = world
    hist = [PastStep('Tap "Wi-Fi"', "tap(10, 20)", ui_hash(before), "fail"), PastStep("Go home", "home()", "x", "success")]
    fake_server.push(V("fail"))
    LLMStepJudge(make_client()).judge_step(step_ctx(world, hist, qa=[("Which one?", "Bluetooth")]))
    body = fake_server.chat_requests[0]["body"]
    text = request_text(body)
    assert len(request_images(body)) == 2 and "BEFORE" in text and "AFTER" in text
    assert task.goal in text and "I see" in text and "toggle the setting" in text
    assert 'Tap "Wi-Fi" -> tap(10, 20) [fail] (on the same screen' in text
    assert "Go home -> home() [success]\n" in text + "\n"           # other screen: no marker
    assert "Q: Which one? A: Bluetooth" in text and "Executed action: tap(" in text
    assert "[button]" in text or "app:" in text                      # UI tree as text
    assert body["response_format"] == {"type": "json_object"}
    fake_server.push(V("fail"))
    LLMStepJudge(make_client(), LLMJudgeConfig(include_ui_text=False, json_mode=False)).judge_step(
        step_ctx(world, action="none"))
    body = fake_server.chat_requests[1]["body"]
    assert "could not be turned into an action" in request_text(body) and "app:" not in request_text(body)
    assert "response_format" not in body


@pytest.mark.parametrize("raw,want", [("justified", AskVerdict.JUSTIFIED), ("unjustified", AskVerdict.UNJUSTIFIED)])
def test_ask_judge_verdicts_and_prompt(fake_server, make_client, world, raw, want):
    fake_server.push(V(raw))
    j = LLMAskJudge(make_client()).judge_ask(step_ctx(world, action="ask", qa=[("Size?", "42")]))
    assert j.verdict is want
    body = fake_server.chat_requests[0]["body"]
    text = request_text(body)
    assert len(request_images(body)) == 1 and "Which setting?" in text and world[0].goal in text
    assert "Q: Size? A: 42" in text


@pytest.mark.parametrize("raw,want", [("success", TerminalVerdict.SUCCESS), ("fail", TerminalVerdict.FAIL),
                                      ("blocked_complete", TerminalVerdict.BLOCKED_COMPLETE),
                                      ("Blocked complete", TerminalVerdict.BLOCKED_COMPLETE),
                                      ("blocked-complete", TerminalVerdict.BLOCKED_COMPLETE)])
def test_terminal_judge_verdicts_and_prompt(fake_server, make_client, world, raw, want):
    task, before, after, *_ = world
    hist = [PastStep('Tap "A"', "tap(1, 2)", "h1", "success"), PastStep('Tap "B"', "tap(3, 4)", "h2", "fail")]
    fake_server.push(V(raw))
    ctx = TerminalContext(task, EndReason.COMPLETE, "42", [before, after, after, before], hist)
    j = LLMTerminalJudge(make_client()).judge_terminal(ctx)
    assert j.verdict is want
    body = fake_server.chat_requests[0]["body"]
    text = request_text(body)
    assert len(request_images(body)) == 3                           # the last 3 screens only
    assert "Answer given by the agent: 42" in text
    assert 'Tap "A" -> tap(1, 2) [success]' in text and 'Tap "B" -> tap(3, 4) [fail]' in text


@pytest.mark.parametrize("end", [EndReason.BUDGET, EndReason.INVALID])
def test_terminal_judge_calls_nothing_without_completion(fake_server, make_client, world, end):
    j = LLMTerminalJudge(make_client()).judge_terminal(TerminalContext(world[0], end, None, [world[1]], []))
    assert j.verdict is TerminalVerdict.FAIL and not fake_server.chat_requests


def test_malformed_json_is_retried(fake_server, make_client, world):
    fake_server.push(reply("I think it worked!"), V("maybe"), reply('{"verdict": "success", "reason": 3}'),
                     V("success", "ok now"))
    j = LLMStepJudge(make_client(), LLMJudgeConfig(format_retries=3)).judge_step(step_ctx(world))
    assert j.verdict is StepVerdict.SUCCESS and len(fake_server.chat_requests) == 4
    assert j.info["usage"]["prompt_tokens"] == 400                  # all attempts are accounted


def test_malformed_forever_is_unavailable_not_a_default(fake_server, make_client, world):
    fake_server.default = reply("no json, sorry")
    with pytest.raises(JudgeUnavailable):
        LLMStepJudge(make_client()).judge_step(step_ctx(world))
    assert len(fake_server.chat_requests) == 3                      # 1 + format_retries


@pytest.mark.parametrize("failure", [status(500), status(429), status(400)])
def test_unavailable_endpoint_raises_judge_unavailable(fake_server, make_client, world, failure):
    fake_server.default = failure
    c = make_client(max_retries=1)
    for judge, call in ((LLMStepJudge(c), lambda j: j.judge_step(step_ctx(world))),
                        (LLMAskJudge(c), lambda j: j.judge_ask(step_ctx(world, action="ask"))),
                        (LLMTerminalJudge(c), lambda j: j.judge_terminal(
                            TerminalContext(world[0], EndReason.COMPLETE, None, [world[1]], [])))):
        with pytest.raises(JudgeUnavailable):
            call(judge)


def test_config_errors_propagate(fake_server, make_client, world):
    fake_server.default = status(401)
    with pytest.raises(APIRequestError):
        LLMStepJudge(make_client()).judge_step(step_ctx(world))


def test_judge_uses_cache(fake_server, make_client, world):
    fake_server.push(V("success"))
    j1 = LLMStepJudge(make_client(cache=True)).judge_step(step_ctx(world))
    j2 = LLMStepJudge(make_client(cache=True)).judge_step(step_ctx(world))
    assert j1.verdict is j2.verdict is StepVerdict.SUCCESS and j2.info["cached"] and j2.info["cost"] == 0
    assert len(fake_server.chat_requests) == 1


def test_verdict_validator_is_strict():
    v = verdict_validator(StepVerdict)
    assert v({"verdict": "success"}) == (StepVerdict.SUCCESS, "")
    for bad in ([], "success", {"reason": "x"}, {"verdict": 1}, {"verdict": "great"}, {"verdict": "fail", "reason": []}):
        with pytest.raises(ValueError):
            v(bad)


def _responder(step="success", ask="justified", terminal="success"):
    def respond(req):
        system = req["messages"][0]["content"]
        if "step judge" in system:
            return V(step)
        if "ask the user" in system:
            return V(ask)
        return V(terminal)
    return respond


def _runner(client, terminal_client=None):
    s, a, t = llm_judges(client, terminal_client)
    return EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), s, a, t)


def test_runner_with_llm_judges_rewards(fake_server, make_client):
    fake_server.responder = _responder()
    task = make_task("settings_toggle", 1, perturb=PerturbConfig.off())
    ask_task = make_task("shop_ask_size", 1, perturb=PerturbConfig.off())
    [tr, tr_ask] = _runner(make_client()).run([task, ask_task])
    asks = [s for s in tr_ask.steps if s.kind == "ask_user"]
    assert tr_ask.valid and asks and all(s.verdict == "justified" and s.reward == 1.0 for s in asks)
    n_ask_calls = len(tr_ask.steps) + 1 - sum(s.kind == "complete" for s in tr_ask.steps)
    assert tr.valid and tr.end == "complete" and tr.success and tr.terminal_reward == 2.0
    device_steps = [s for s in tr.steps if s.kind == "device"]
    assert device_steps and all(s.verdict == "success" and s.reward == 1.0 for s in device_steps)
    assert len(fake_server.chat_requests) == len(device_steps) + 1 + n_ask_calls


def test_runner_judge_unavailable_invalidates_without_reward(fake_server, make_client):
    task = make_task("settings_toggle", 1, perturb=PerturbConfig.off())
    fake_server.default = status(503)
    [tr] = _runner(make_client(max_retries=1)).run([task])
    assert not tr.valid and tr.invalid_reason == JudgeUnavailable.reason and tr.end == "invalid"
    assert tr.terminal_reward == 0.0 and all(s.reward == 0.0 for s in tr.steps) and tr.total_reward == 0.0
    # steps judged fine, then the terminal judge (another endpoint) is down: still invalid, no reward
    fake_server.default = None
    fake_server.responder = _responder()
    down = FakeChatServer()
    down.default = status(500)
    try:
        bad = ChatClient(APIConfig(base_url=down.url, model="big", api_key_env=KEY_ENV, max_retries=1,
                                   backoff_base=0.01))
        [tr2] = _runner(make_client(), bad).run([task])
    finally:
        down.close()
    assert any(st.verdict == "success" for st in tr2.steps) and len(down.chat_requests) == 2
    assert not tr2.valid and tr2.invalid_reason == "judge_unavailable"
    assert tr2.total_reward == 0.0 and tr2.terminal_verdict is None
