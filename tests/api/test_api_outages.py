"""A dead or misbehaving endpoint: the breaker stops calls in seconds, malformed replies are
invalid (masked), a rejected request ends the command with the finished episodes saved,
and credentials inside a base URL never show."""
from __future__ import annotations

import json
import logging
import time

import pytest

from navrl.agent.api_planner import APIPlanner, APIPlannerConfig
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.api import APIConfig, APIUnavailable, ChatClient
from navrl.worlds.phone.sim import PerturbConfig
from navrl.judge.base import JudgeUnavailable
from navrl.judge.llm import LLMStepJudge
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner
from navrl.worlds.phone.task import make_task
from fake_api import KEY_ENV, SECRET, raw, reply, status

MSG = [{"role": "user", "content": "hello"}]
DEEP = b"[" * 200_000 + b"]" * 200_000
COMPLETE = "Reasoning: nothing to do\nStep: Complete\nRemaining: none"


def _completion(content) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}]}).encode()


def test_breaker_stops_a_dead_endpoint_in_seconds(fake_server, make_client):
    """500 on every request: with the default backoff (1 s, doubling) 20 calls x 5 attempts
    would take about 20 x 15 s; the breaker opens after 5 failed attempts in a row and the
    remaining calls fail at once, without a request."""
    fake_server.default = status(500)
    c = make_client(max_retries=4, backoff_base=0.05, backoff_max=0.1, breaker_threshold=5, breaker_cooldown=60)
    t0 = time.perf_counter()
    for _ in range(20):
        with pytest.raises(APIUnavailable):
            c.chat(MSG)
    elapsed = time.perf_counter() - t0
    assert len(fake_server.chat_requests) == 5          # 5 attempts in total, not 20 x 5 = 100
    assert c.totals["refused"] == 19 and c.circuit_open
    assert elapsed < 5.0


def test_breaker_lets_one_trial_through_after_the_cooldown_and_closes_on_success(fake_server, make_client):
    fake_server.push(status(503), status(503), status(503))
    c = make_client(max_retries=5, backoff_base=0.0, breaker_threshold=3, breaker_cooldown=0.3)
    with pytest.raises(APIUnavailable, match="circuit open"):
        c.chat(MSG)
    assert len(fake_server.chat_requests) == 3
    with pytest.raises(APIUnavailable):
        c.chat(MSG)                                     # refused: no request
    assert len(fake_server.chat_requests) == 3
    time.sleep(0.35)
    assert c.chat(MSG).text == "ok" and not c.circuit_open
    assert len(fake_server.chat_requests) == 4


def test_judges_on_a_dead_endpoint_mask_episodes_quickly(fake_server, make_client):
    fake_server.default = status(502)
    client = make_client(max_retries=4, backoff_base=0.05, breaker_threshold=4, breaker_cooldown=60)
    judge = LLMStepJudge(client)
    tasks = [make_task("settings_toggle", s, perturb=PerturbConfig.off()) for s in range(6)]
    from navrl.agent.planner import ExpertPlanner
    oracle = OracleJudge()
    t0 = time.perf_counter()
    trajs = EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), judge, oracle, oracle).run(tasks)
    assert all(not t.valid and t.invalid_reason == JudgeUnavailable.reason for t in trajs)
    assert len(fake_server.chat_requests) == 4 and time.perf_counter() - t0 < 10


@pytest.mark.parametrize("body", [DEEP, b"<html>bad gateway</html>", b"[1, 2]", b'{"choices": "abc"}',
                                  _completion(5), _completion([{"type": "text"}]), b"null",
                                  b'{"choices": [{"message": null}]}',
                                  json.dumps({"choices": [{"message": {"content": "x"}}],
                                              "usage": {"prompt_tokens": "many"}}).encode()])
def test_a_malformed_body_is_a_failed_attempt_never_a_crash(fake_server, make_client, body):
    fake_server.default = raw(body)
    with pytest.raises(APIUnavailable, match="bad response"):
        make_client(max_retries=1, backoff_base=0.0).chat(MSG)
    assert len(fake_server.chat_requests) == 2


def test_a_deeply_nested_reply_masks_the_planners_episode(fake_server, make_client):
    fake_server.default = raw(DEEP)
    planner = APIPlanner(make_client(max_retries=0), APIPlannerConfig(workers=1))
    oracle = OracleJudge()
    [tr] = EpisodeRunner(planner, AccessibilityGrounder(), oracle, oracle, oracle).run(
        [make_task("settings_toggle", 0, perturb=PerturbConfig.off())])
    assert not tr.valid and tr.invalid_reason == "planner_unavailable" and tr.total_reward == 0.0


def test_a_deeply_nested_json_verdict_is_invalid_then_unavailable(fake_server, make_client):
    fake_server.default = reply("[" * 100_000 + "]" * 100_000)
    from navrl.judge.verdicts import StepVerdict
    client = make_client()
    with pytest.raises(Exception) as ei:
        client.chat_json(MSG, lambda v: StepVerdict(v["verdict"]), format_retries=1)
    assert type(ei.value).__name__ == "MalformedReply" and "nests too deeply" in str(ei.value)


@pytest.fixture
def api_env(fake_server, monkeypatch, api_key):
    monkeypatch.setenv("NAVRL_API_BASE", fake_server.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "planner")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", KEY_ENV)
    monkeypatch.delenv("NAVRL_API_CACHE", raising=False)
    monkeypatch.delenv("NAVRL_API_PRICES", raising=False)


@pytest.mark.parametrize("code", [401, 400])
def test_a_rejected_request_ends_eval_with_one_line_and_the_finished_episodes_saved(
        fake_server, api_env, tmp_path, capsys, code):
    from navrl.cli.main import main
    fake_server.push(reply(COMPLETE), reply(COMPLETE))   # two episodes finish (one step each), then the key is refused
    fake_server.default = status(code)
    out = tmp_path / "ev"
    rc = main(["eval", "--agent", "api", "-n", "5", "--batch", "1", "--out", str(out)])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and "WARNING" not in ln]
    assert rc == 2
    assert len(err) == 1 and f"HTTP {code}" in err[0] and "2 finished episodes are saved" in err[0], err
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 2
    res = json.loads((out / "results.json").read_text())
    assert res["n"] == 2 and "aborted" in res
    assert len(fake_server.chat_requests) == 3           # no retries of a rejected request


def test_eval_with_no_valid_episode_exits_3_and_says_why(tmp_path, capsys):
    from navrl.cli.main import main
    out = tmp_path / "ev"
    rc = main(["eval", "-n", "3", "--faults", "device_lost=1", "--out", str(out)])
    captured = capsys.readouterr()
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert rc == 3
    assert len(err) == 1 and "no valid episodes" in err[0] and "device_lost 3" in err[0]
    assert "0.0%" not in captured.out
    res = json.loads((out / "results.json").read_text())
    assert res["success"] is None and res["masked"] == 3 and res["n"] == 0


# ------------------------------------------------------------------ secrets
def test_credentials_in_the_base_url_never_show(fake_server, monkeypatch, caplog):
    url = fake_server.url.replace("http://", "http://alice:URLSECRET-42@")
    monkeypatch.delenv(KEY_ENV, raising=False)
    cfg = APIConfig(base_url=url, model="m", api_key_env=KEY_ENV, max_retries=1, backoff_base=0.0, timeout=2)
    c = ChatClient(cfg)
    fake_server.default = status(500)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(APIUnavailable) as ei:
            c.chat(MSG)
        fake_server.default = status(401)
        c2 = ChatClient(cfg)
        with pytest.raises(Exception) as ej:
            c2.chat(MSG)
    shown = [repr(cfg), str(cfg), repr(c), str(c), str(ei.value), str(ej.value), caplog.text,
             repr(APIPlanner(c))]
    for s in shown:
        assert "URLSECRET-42" not in s and "alice:" not in s, s
    assert "***@127.0.0.1" in repr(c) and "***@" in str(ei.value)
    assert len(fake_server.chat_requests) == 3


def test_cache_key_depends_on_the_endpoint(fake_server, make_client, tmp_path):
    fake_server.default = reply("from A")
    a = make_client(cache=True)
    assert a.chat(MSG).text == "from A"
    b = make_client(cache=True, base_url=fake_server.url.replace("127.0.0.1", "localhost"))
    fake_server.default = reply("from B")
    r = b.chat(MSG)
    assert r.text == "from B" and not r.cached           # another endpoint never reads A's reply
    assert a.chat(MSG).cached
