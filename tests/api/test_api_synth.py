"""Task synthesis end to end through ``navrl synth-tasks``: generate, review, export, load, judge."""
from __future__ import annotations

import io
import json

import pytest

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import RandomPlanner
from navrl.cli.main import main
from navrl.judge.llm import llm_judges
from navrl.rollout.runner import EpisodeRunner
from navrl.worlds.phone.task import TaskError
from navrl.worlds.phone.synth import (SynthError, SynthTask, SynthTaskSpec, apply_decisions, load_suite, parse_ids,
                               read_review, synthesize, write_review)
from fake_api import KEY_ENV, reply, request_text, status

PAIRS = {"pairs": [{"apps": ["Weather", "Calendar"], "reason": "plan outdoor events on clear days"},
                   {"apps": ["quickbite", "Mail"], "reason": "order receipts arrive by mail"},   # case-insensitive
                   {"apps": ["Weather", "Teleporter"], "reason": "no such app"},
                   {"apps": ["Notes", "Notes"], "reason": "same app"},
                   {"apps": ["Calendar", "Weather"], "reason": "duplicate"},
                   {"apps": ["Contacts", "Messages"], "reason": "text a friend"}]}


def teacher(bad_pair: str | None = "Contacts"):
    """A fake teacher: pairs first, then tasks per pair; the ``bad_pair`` pair always gets garbage."""
    def respond(req):
        text = request_text(req)
        if "Propose" in text:
            return reply(json.dumps(PAIRS))
        app1 = text.split("App 1: ", 1)[1].split(":", 1)[0]
        if app1 == bad_pair:
            return reply("Here are some tasks: 1. text Bob")           # malformed, every time
        return reply(json.dumps({"tasks": [
            {"goal": f"Use {app1} for task one.", "profile": {}},
            {"goal": f"Use {app1} for task two.", "profile": {"friend name": "Ada"}},
            {"goal": "", "profile": {}},                                 # bad entry: reported, skipped
            {"goal": f"Use {app1} for task one."}]}))                    # duplicate goal
    return respond


@pytest.fixture
def teacher_env(fake_server, monkeypatch, api_key, tmp_path):
    monkeypatch.setenv("NAVRL_API_BASE", fake_server.url)
    monkeypatch.setenv("NAVRL_API_MODEL", "teacher")
    monkeypatch.setenv("NAVRL_API_KEY_ENV", KEY_ENV)
    monkeypatch.setenv("NAVRL_API_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NAVRL_API_PRICES", raising=False)
    return fake_server


def test_generate_review_export_load_and_judge(teacher_env, tmp_path, capsys, monkeypatch):
    teacher_env.responder = teacher()
    review = tmp_path / "review.jsonl"
    assert main(["synth-tasks", "generate", "--out", str(review), "--pairs", "3", "--per-pair", "3"]) == 0
    out, err = capsys.readouterr()
    assert "4 tasks from 3 app pairs" in out
    assert "Teleporter" in err and "same app twice" in err and "malformed tasks" in err and "missing goal" in err and "duplicate goal" in err
    lines = [json.loads(x) for x in review.read_text().splitlines()]
    assert [x["id"] for x in lines] == [1, 2, 3, 4]
    assert all(x["accepted"] is None and isinstance(x["goal"], str) and len(x["apps"]) == 2 for x in lines)
    assert lines[0]["apps"] == ["Weather", "Calendar"] and lines[2]["apps"] == ["QuickBite", "Mail"]
    assert lines[1]["profile"] == {"friend name": "Ada"}
    assert not any("Contacts" in x["apps"] for x in lines)               # the malformed pair wrote nothing
    # re-running costs nothing: every valid teacher reply is cached
    n = len(teacher_env.chat_requests)
    assert main(["synth-tasks", "generate", "--out", str(review), "--pairs", "3", "--per-pair", "3", "--overwrite"]) == 0
    assert len(teacher_env.chat_requests) - n == 3                        # only the malformed pair asks again

    assert main(["synth-tasks", "export", str(review), "--out", str(tmp_path / "s.json")]) == 2
    assert "no accepted tasks" in capsys.readouterr().err
    assert main(["synth-tasks", "review", str(review), "--accept", "1,3-4", "--reject", "2"]) == 0
    assert [t.accepted for t in read_review(review)] == [True, False, True, True]
    assert main(["synth-tasks", "review", str(review), "--reject", "4"]) == 0
    suite = tmp_path / "synth.json"
    assert main(["synth-tasks", "export", str(review), "--out", str(suite)]) == 0
    d = json.loads(suite.read_text())
    assert d["name"] == "synth" and d["judge"] == "llm" and [t["id"] for t in d["tasks"]] == [1, 3]

    tasks = load_suite(suite)
    assert all(isinstance(t, SynthTaskSpec) for t in tasks) and tasks[0].apps == ("Weather", "Calendar")
    with pytest.raises(TaskError):
        tasks[0].check(None)
    # judged by the LLM judges: a synthesized task runs through the episode runner
    teacher_env.responder = lambda req: reply(json.dumps({"verdict": "fail", "reason": "no progress"}))
    s, a, t = llm_judges(teacher_env_client(teacher_env, tmp_path))
    trs = EpisodeRunner(RandomPlanner(0), AccessibilityGrounder(), s, a, t).run([tk.with_(max_steps=3) for tk in tasks])
    assert all(tr.valid for tr in trs) and all(st.verdict is not None for tr in trs for st in tr.steps)


def teacher_env_client(server, tmp_path):
    from navrl.api import APIConfig, ChatClient
    return ChatClient(APIConfig(base_url=server.url, model="judge", api_key_env=KEY_ENV, max_retries=0))


def test_generate_failures_write_nothing(teacher_env, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    teacher_env.responder = teacher()
    assert main(["synth-tasks", "generate", "--out", str(out), "--pairs", "3", "--strict"]) == 2
    assert "problem" in capsys.readouterr().err and not out.exists()
    teacher_env.responder = lambda req: reply("Weather and Calendar go well together!")
    assert main(["synth-tasks", "generate", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "malformed app pairs" in err and err.count("\n") == 1 and not out.exists()
    teacher_env.responder = lambda req: reply(json.dumps({"pairs": [{"apps": ["Foo", "Bar"]}]}))
    assert main(["synth-tasks", "generate", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no usable app pair" in err and "unknown app" in err and not out.exists()
    teacher_env.responder = None
    teacher_env.default = status(500)
    assert main(["synth-tasks", "generate", "--out", str(out), "--max-retries", "1"]) == 2
    assert "teacher unavailable" in capsys.readouterr().err and not out.exists()
    assert not list(tmp_path.glob(".r.jsonl*"))                          # no temp files either
    out.write_text("keep me\n")
    assert main(["synth-tasks", "generate", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_text() == "keep me\n"
    assert main(["synth-tasks", "generate", "--out", str(tmp_path / "x.jsonl"), "--apps", "Weather,Nope"]) == 2


def test_generate_bad_numbers(teacher_env, tmp_path, capsys):
    for bad in (["--pairs", "0"], ["--timeout", "0"], ["--max-retries", "-1"]):
        assert main(["synth-tasks", "generate", "--out", str(tmp_path / "r.jsonl"), *bad]) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_generate_without_endpoint(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("NAVRL_API_BASE", raising=False)
    monkeypatch.delenv("NAVRL_API_MODEL", raising=False)
    assert main(["synth-tasks", "generate", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "NAVRL_API_BASE" in capsys.readouterr().err


def _review_file(tmp_path, n=3):
    p = tmp_path / "rev.jsonl"
    write_review(p, [SynthTask(i, f"goal {i}", ["Weather", "Calendar"]) for i in range(1, n + 1)])
    return p


def test_review_interactive(tmp_path, monkeypatch, capsys):
    p = _review_file(tmp_path, 4)

    class TTY(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr("sys.stdin", TTY("y\nmaybe\nn\ns\nq\n"))
    assert main(["synth-tasks", "review", str(p)]) == 0
    assert [t.accepted for t in read_review(p)] == [True, False, None, None]
    assert "2 lines changed: 1 accepted, 1 rejected, 2 not reviewed" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", TTY("y\n"))                          # EOF after one answer: saved
    assert main(["synth-tasks", "review", str(p)]) == 0
    assert [t.accepted for t in read_review(p)] == [True, False, True, None]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["synth-tasks", "review", str(p)]) == 2
    assert "--accept-all" in capsys.readouterr().err


def test_review_flags(tmp_path, capsys):
    p = _review_file(tmp_path)
    assert main(["synth-tasks", "review", str(p), "--accept-all", "--reject", "2"]) == 0
    assert [t.accepted for t in read_review(p)] == [True, False, True]
    for bad in (["--accept", "9"], ["--accept", "1", "--reject", "1"], ["--accept", "x"], ["--accept", "3-1"]):
        assert main(["synth-tasks", "review", str(p), *bad]) == 2
        assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("content,msg", [
    ("{not json\n", ":1: not JSON"),
    ('{"id": 1, "goal": "g", "apps": ["Weather"], "accepted": null}\n[1]\n', ":2: each line"),
    ('{"id": 1, "goal": "", "apps": ["Weather"]}\n', "'goal'"),
    ('{"id": 1, "goal": "g", "apps": []}\n', "'apps'"),
    ('{"id": 1, "goal": "g", "apps": ["Weather"], "accepted": "yes"}\n', "'accepted'"),
    ('{"id": 1, "goal": "g", "apps": ["W"]}\n{"id": 1, "goal": "h", "apps": ["W"]}\n', "duplicate id"),
    ('{"id": 0, "goal": "g", "apps": ["W"]}\n', "'id'"),
    ("\n\n", "no tasks"),
])
def test_bad_review_files_are_one_line_errors(tmp_path, capsys, content, msg):
    p = tmp_path / "bad.jsonl"
    p.write_text(content)
    for cmd in (["review", str(p), "--accept-all"], ["export", str(p), "--out", str(tmp_path / "o.json")]):
        assert main(["synth-tasks", *cmd]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1 and err.startswith("navrl: error:")
    assert not (tmp_path / "o.json").exists()
    assert main(["synth-tasks", "review", str(tmp_path / "missing.jsonl"), "--accept-all"]) == 2


def test_bad_suite_files(tmp_path):
    p = tmp_path / "s.json"
    for content in ("nope", "{}", json.dumps({"format": "navrl.synth-suite", "version": 9, "tasks": []}),
                    json.dumps({"format": "navrl.synth-suite", "version": 1, "tasks": []}),
                    json.dumps({"format": "navrl.synth-suite", "version": 1,
                                "tasks": [{"id": 1, "goal": "g", "apps": ["Teleporter"]}]})):
        p.write_text(content)
        with pytest.raises(SynthError):
            load_suite(p)
    with pytest.raises(SynthError):
        load_suite(tmp_path / "missing.json")


def test_library_helpers(fake_server, make_client):
    assert parse_ids("1, 3,5-7") == {1, 3, 5, 6, 7}
    tasks = [SynthTask(i, "g", ["A"]) for i in (1, 2, 3)]
    assert apply_decisions(tasks, {1}, {2}) == 2 and apply_decisions(tasks, {1}, {2}) == 0
    fake_server.responder = teacher(bad_pair=None)
    res = synthesize(make_client(), n_pairs=2, tasks_per_pair=5, apps=["Weather", "Calendar", "QuickBite", "Mail"])
    assert [p.apps for p in res.pairs] == [("Weather", "Calendar"), ("QuickBite", "Mail")]
    assert len(res.tasks) == 4 and res.problems                        # the bad entries were reported
    with pytest.raises(SynthError):
        synthesize(make_client(), n_pairs=0)
