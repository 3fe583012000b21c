"""ChatClient against the local fake server: wire format, retries, backoff, costs, cache, key hygiene."""
from __future__ import annotations

import base64
import io
import json
import logging
import pickle
import socket

import pytest
from PIL import Image

from navrl.api import (APIConfig, APIRequestError, APIUnavailable, ChatClient, MalformedReply, Price, PriceTable,
                       ResponseCache, extract_json)
from fake_api import KEY_ENV, SECRET, raw, reply, request_images, sleep, status

MSG = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]


def test_chat_wire_format_usage_and_cost(fake_server, make_client):
    fake_server.push(reply("hi there", prompt_tokens=1000, completion_tokens=500))
    c = make_client(prices=PriceTable({"test-model": (2.0, 8.0)}))
    r = c.chat(MSG, temperature=0.3, max_tokens=77)
    assert r.text == "hi there"
    assert r.usage == {"prompt_tokens": 1000, "completion_tokens": 500}
    assert r.cost == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6)
    assert not r.cached and r.attempts == 1
    assert r.usage_dict() == {"prompt_tokens": 1000, "completion_tokens": 500, "cost": r.cost}
    req = fake_server.chat_requests[0]
    assert req["headers"]["authorization"] == f"Bearer {SECRET}"
    body = req["body"]
    assert body["model"] == "test-model" and body["temperature"] == 0.3 and body["max_tokens"] == 77
    assert body["messages"] == MSG and "response_format" not in body
    assert c.totals["calls"] == 1 and c.totals["cost"] == pytest.approx(r.cost)


def test_images_are_png_data_urls_on_last_user_message(fake_server, make_client, screenshot):
    a, b = screenshot((255, 0, 0)), screenshot((0, 0, 255), size=(30, 40))
    make_client().chat(MSG, images=[a, b], json_mode=True)
    body = fake_server.chat_requests[0]["body"]
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == MSG[0]
    parts = body["messages"][1]["content"]
    assert parts[0] == {"type": "text", "text": "hello"}
    urls = request_images(body)
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    back = [Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))) for u in urls]
    assert back[0].size == (120, 200) and back[0].getpixel((5, 5))[:3] == (255, 0, 0)
    assert back[1].size == (30, 40)


def test_max_completion_tokens_param(fake_server, make_client):
    make_client(max_tokens_param="max_completion_tokens", max_tokens=55).chat(MSG)
    body = fake_server.chat_requests[0]["body"]
    assert body["max_completion_tokens"] == 55 and "max_tokens" not in body


@pytest.mark.parametrize("failures", [[status(500)], [status(429)], [status(503), status(502)],
                                      [status(408), status(429)]])
def test_transient_errors_are_retried(fake_server, make_client, failures):
    fake_server.push(*failures, reply("finally"))
    c = make_client()
    r = c.chat(MSG)
    assert r.text == "finally" and r.attempts == len(failures) + 1
    assert len(fake_server.chat_requests) == len(failures) + 1
    assert c.totals["retries"] == len(failures)


def test_unavailable_after_retries(fake_server, make_client):
    fake_server.push(status(500), status(500), status(500), reply("too late"))
    c = make_client(max_retries=2)
    with pytest.raises(APIUnavailable) as ei:
        c.chat(MSG)
    assert ei.value.attempts == 3 and "HTTP 500" in str(ei.value)
    assert len(fake_server.chat_requests) == 3


def test_timeout_is_retried_then_unavailable(fake_server, make_client):
    fake_server.push(sleep(0.6, "slow"), reply("fast"))
    c = make_client(timeout=0.2, max_retries=1)
    assert c.chat(MSG).text == "fast"
    fake_server.push(sleep(0.6), sleep(0.6))
    with pytest.raises(APIUnavailable, match="timeout"):
        c.chat(MSG, use_cache=False)


def test_connection_error_is_unavailable(api_key):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()   # nothing listens there now
    c = ChatClient(APIConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env=KEY_ENV, timeout=1,
                             max_retries=1, backoff_base=0.01))
    with pytest.raises(APIUnavailable, match="connection"):
        c.chat(MSG)


def test_bad_response_body_is_retried(fake_server, make_client):
    fake_server.push(raw(b"{not json"), raw(b'{"object": "chat.completion", "choices": []}'), reply("good"))
    r = make_client(max_retries=3).chat(MSG)
    assert r.text == "good" and len(fake_server.chat_requests) == 3


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(fake_server, make_client, code):
    fake_server.push(status(code), reply("never"))
    with pytest.raises(APIRequestError) as ei:
        make_client().chat(MSG)
    assert ei.value.status == code and len(fake_server.chat_requests) == 1
    assert ei.value.is_config_error == (code in (401, 403, 404))
    if code == 401:
        assert KEY_ENV in str(ei.value) and SECRET not in str(ei.value)


def test_backoff_is_exponential_capped_seeded_and_honours_retry_after(fake_server, api_key):
    def run(seed, script):
        waits: list[float] = []
        fake_server.push(*script)
        c = ChatClient(APIConfig(base_url=fake_server.url, model="m", api_key_env=KEY_ENV, max_retries=4,
                                 backoff_base=1.0, backoff_max=5.0, jitter=0.5, seed=seed), sleep=waits.append)
        with pytest.raises(APIUnavailable):
            c.chat(MSG)
        return waits
    w1 = run(7, [status(500)] * 5)
    w2 = run(7, [status(500)] * 5)
    w3 = run(8, [status(500)] * 5)
    assert w1 == w2 != w3                                # seeded jitter: reproducible
    assert len(w1) == 4
    for i, w in enumerate(w1):                           # base * 2^i * (1 + 0.5 u), capped before jitter
        lo = min(5.0, 2.0 ** i)
        assert lo <= w <= lo * 1.5
    w4 = run(7, [status(429, retry_after=3)] + [status(500)] * 4)
    assert w4[0] >= 3.0                                  # Retry-After wins over a shorter backoff
    w5 = run(7, [status(429, retry_after=999)] + [status(500)] * 4)
    assert w5[0] <= 5.0                                  # ... but is capped at backoff_max


def test_key_never_in_logs_repr_cache_or_pickle(fake_server, make_client, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    fake_server.push(status(500), status(429), reply('{"a": 1}'), status(401))
    c = make_client(cache=True)
    c.chat(MSG)
    with pytest.raises(APIRequestError) as ei:
        c.chat([{"role": "user", "content": "other"}])
    texts = [caplog.text, repr(c), str(c), repr(c.config), str(c.config), str(ei.value), repr(c.cache)]
    assert "retry" in caplog.text                         # the retries were logged ...
    for t in texts:
        assert SECRET not in t                            # ... without the key
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert SECRET.encode() not in p.read_bytes()
    with pytest.raises(TypeError):
        pickle.dumps(c)


def test_unset_key_variable_never_falls_back_to_openai_key(fake_server, monkeypatch):
    monkeypatch.delenv("NAVRL_UNSET_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-send-me")
    c = ChatClient(APIConfig(base_url=fake_server.url, model="m", api_key_env="NAVRL_UNSET_KEY"))
    c.chat(MSG)
    auth = fake_server.chat_requests[0]["headers"]["authorization"]
    assert "sk-do-not-send-me" not in auth and auth == "Bearer EMPTY"


def test_price_table_lookup_and_files(tmp_path):
    t = PriceTable({"gpt-x": (1.0, 2.0), "gpt-x-mini": {"input": 0.1, "output": 0.4}}, default=(0.5, 0.5))
    assert t.cost("gpt-x", 1_000_000, 0) == pytest.approx(1.0)
    assert t.cost("gpt-x-2025-01-01", 0, 1_000_000) == pytest.approx(2.0)      # prefix
    assert t.cost("gpt-x-mini-2025", 1_000_000, 1_000_000) == pytest.approx(0.5)  # longest prefix
    assert t.cost("other", 2_000_000, 0) == pytest.approx(1.0)                   # default
    assert t.known("gpt-x-9") and not t.known("other")
    assert PriceTable().cost("anything", 10**6, 10**6) == 0.0
    p = tmp_path / "prices.json"
    p.write_text(json.dumps({"default": [1, 1], "m": [3, 4]}))
    t2 = PriceTable.from_file(p)
    assert t2.lookup("m") == Price(3, 4) and t2.lookup("z") == Price(1, 1)
    with pytest.raises(ValueError):
        PriceTable({"m": (-1, 0)})
    with pytest.raises(ValueError):
        PriceTable({"m": "cheap"})
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="price table"):
        PriceTable.from_file(tmp_path / "bad.json")


def test_cache_hit_makes_no_second_request(fake_server, make_client, screenshot, tmp_path):
    fake_server.push(reply("first", 10, 5), reply("second", 10, 5), reply("third", 10, 5), reply("fourth", 10, 5))
    c = make_client(cache=True, prices=PriceTable({"test-model": (1, 1)}))
    img = screenshot()
    r1 = c.chat(MSG, images=[img])
    r2 = c.chat(MSG, images=[screenshot()])               # equal pixels: same key
    assert r1.text == r2.text == "first" and r2.cached and r2.cost == 0.0 and r1.cost > 0
    assert len(fake_server.chat_requests) == 1
    assert c.chat(MSG, images=[screenshot((1, 2, 3))]).text == "second"   # other image bytes
    assert c.chat(MSG, images=[img], temperature=0.7).text == "third"     # other params
    c2 = make_client(cache=True)                          # a re-run: a new client on the same cache dir
    assert c2.chat(MSG, images=[img]).cached and len(fake_server.chat_requests) == 3
    assert c2.totals["cost"] == 0.0
    assert c.chat(MSG, images=[img], use_cache=False).text == "fourth"
    # a corrupt entry is a miss, not a crash
    for p in (tmp_path / "cache").rglob("*.json"):
        p.write_text("garbage")
    fake_server.push(reply("again"))
    assert make_client(cache=True).chat(MSG, images=[img]).text == "again"


def test_chat_json_reasks_on_malformed_and_caches_only_valid(fake_server, make_client):
    def validate(v):
        if not isinstance(v, dict) or v.get("ok") is not True:
            raise ValueError("need {\"ok\": true}")
        return v
    fake_server.push(reply("sure! here it is"), reply('```json\n{"ok": true}\n```', 7, 3))
    c = make_client(cache=True, prices=PriceTable({"test-model": (1e6, 0)}))   # $1 per prompt token
    v, r = c.chat_json(MSG, validate)
    assert v == {"ok": True} and r.usage["prompt_tokens"] == 107 and r.cost == pytest.approx(107)
    second = fake_server.chat_requests[1]["body"]["messages"]
    assert second[-2] == {"role": "assistant", "content": "sure! here it is"}
    assert "not valid" in second[-1]["content"]
    assert fake_server.chat_requests[0]["body"]["response_format"] == {"type": "json_object"}
    v2, r2 = make_client(cache=True).chat_json(MSG, validate)   # re-run: free
    assert v2 == v and r2.cached and len(fake_server.chat_requests) == 2
    fake_server.push(reply("no"), reply("[1, 2]"), reply('{"ok": false}'))
    with pytest.raises(MalformedReply):
        c.chat_json([{"role": "user", "content": "again"}], validate, format_retries=2)
    assert len(fake_server.chat_requests) == 5


def test_extract_json_forms():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Here:\n```json\n{"a": [1, 2]}\n```\nthanks') == {"a": [1, 2]}
    assert extract_json('verdict follows {"verdict": "fail", "reason": "x"} ok') == {"verdict": "fail", "reason": "x"}
    assert extract_json("[1, 2]") == [1, 2]
    for bad in ("", "   ", "no json here", "{broken"):
        with pytest.raises(ValueError):
            extract_json(bad)


def test_config_from_env_and_require(monkeypatch, tmp_path):
    env = {"NAVRL_API_BASE": "http://h/v1", "NAVRL_API_MODEL": "mm", "NAVRL_API_KEY_ENV": "MY_KEY",
           "NAVRL_API_CACHE": str(tmp_path)}
    c = APIConfig.from_env(env)
    assert (c.base_url, c.model, c.api_key_env, c.cache_dir) == ("http://h/v1", "mm", "MY_KEY", str(tmp_path))
    assert APIConfig.from_env(env, model="other", timeout=None).model == "other"
    with pytest.raises(TypeError):
        APIConfig.from_env(env, bogus=1)
    with pytest.raises(ValueError, match="NAVRL_API_BASE and NAVRL_API_MODEL"):
        APIConfig.from_env({}).require()
    with pytest.raises(ValueError, match="NAVRL_API_MODEL"):
        ChatClient(APIConfig.from_env({"NAVRL_API_BASE": "http://h/v1"}))
    with pytest.raises(ValueError):
        APIConfig(api_key_env="sk-looks-like-a-key-not-a-name!")
    with pytest.raises(ValueError):
        APIConfig(timeout=0)


def test_response_cache_roundtrip(tmp_path):
    rc = ResponseCache(tmp_path)
    assert rc.get("ab" * 32) is None
    rc.put("ab" * 32, "text", {"prompt_tokens": 3, "completion_tokens": 4}, "m")
    assert rc.get("ab" * 32)["text"] == "text" and len(rc) == 1 and rc.hits == 1 and rc.misses == 1
    assert not list(tmp_path.rglob(".*"))                 # no temp files left behind


def test_message_validation(make_client):
    c = make_client()
    with pytest.raises(ValueError):
        c.chat([])
    with pytest.raises(ValueError):
        c.chat([{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError):
        c.chat([{"role": "system", "content": "x"}], images=[Image.new("RGB", (2, 2))])
