"""``navrl experiment miniwob --quick``: BC from the scripted solutions, BC + RL and RL only on
two MiniWoB++ tasks, evaluated on the same instances, written out as a table with anchors."""
from __future__ import annotations

import csv
import json

import pytest

from navrl.cli.main import main
from navrl.device.browser import browser_ready
from navrl.experiments.miniwob import ANCHORS, MiniWoBConfig, anchors_csv, load_anchors, results_markdown
from navrl.rl.config import ConfigError
from navrl.worlds.web.tasks import miniwob_available

needs_browser = pytest.mark.skipif(browser_ready() is not None or miniwob_available() is not None,
                                   reason=f"needs Chromium and miniwob: {browser_ready() or miniwob_available()}")


@needs_browser
def test_quick_miniwob_experiment_writes_a_paired_table(tmp_path, capsys):
    out = tmp_path / "mw"
    assert main(["experiment", "miniwob", "--quick", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "results.csv").read_text().splitlines()))
    assert {(r["method"], r["task"]) for r in rows} == {(m, t) for m in ("bc", "bc_rl", "rl")
                                                       for t in ("click-test", "focus-text")}
    assert all(int(r["n"]) + int(r["masked"]) == 2 and 0 <= float(r["success"]) <= 1 for r in rows)
    res = json.loads((out / "results.json").read_text())
    assert res["bc"]["demonstration_steps"] >= 6 and set(res["throughput"]) == {"bc_rl", "rl"}
    assert all(tp["env_steps_per_s"] > 0 for tp in res["throughput"].values())
    assert [c["instances"] for c in res["comparisons"]] == [4, 4]     # paired by instance, all tasks
    md = (out / "results.md").read_text()
    assert "| click-test |" in md and "**mean**" in md and "environment steps/s" in md
    assert all(tp["browser_cpu_s"] > 0 and tp["learner_cpu_s"] > 0 for tp in res["throughput"].values())
    assert "core-s" in md and "screen `160x210@1`" in md and "- judges `page`; RL overrides {" in md
    # every evaluation instance's outcome is kept: another run on the same instances compares paired
    assert {m: sorted(res["outcomes"][m]) for m in res["outcomes"]} == {m: ["click-test", "focus-text"]
                                                                       for m in ("bc", "bc_rl", "rl")}
    assert all(len(v) + int(r["masked"]) == 2 for m in res["outcomes"] for t, v in res["outcomes"][m].items()
               for r in rows if (r["method"], r["task"]) == (m, t))
    assert (out / "curves.png").read_bytes()[:4] == b"\x89PNG"
    for m in ("bc_rl", "rl"):
        ups = [json.loads(x) for x in (out / m / "metrics.jsonl").read_text().splitlines()]
        assert [u["update"] for u in ups if u["kind"] == "update"] == [1]


@pytest.mark.parametrize("yaml_text, says", [
    ("tasks: [click-test]\nmethods: [bc, magic]\n", "unknown method 'magic'"),
    ("tasks: [no-such-page]\n", "no-such-page"),
    ("tasks: [click-test]\nphone: nokia\n", "phone 'nokia'"),
    ("tasks: [click-test]\ntrain: {no_such_field: 1}\n", "train"),
    ("tasks: [click-test]\njudge: oracle\n", "judge must be one of page, page-fields, got 'oracle'"),
    ("tasks: [click-test]\npointer: {type_on_screen: 'yes'}\n", "pointer: type_on_screen must be bool, got str 'yes'"),
    ("tasks: [click-test]\npointer: {d_model: 1.5}\n", "pointer: d_model must be int, got float 1.5"),
    ("tasks: [click-test]\npointer: {no_field: 1}\n", "pointer: unknown field 'no_field'"),
    ("tasks: [click-test]\neval_seed: -1\n", "eval_seed"),
    ("tasks: [click-test]\nsft: {epochs: 2.5}\n", "sft: epochs must be int, got float 2.5"),
    ("tasks: [click-test]\nsft: {epochs: 0}\n", "invalid SFT config"),
    ("tasks: [click-test]\nsft: {no_field: 1}\n", "sft: unknown field 'no_field'"),
    ("tasks: [click-test]\ndagger: {rounds: -1}\n", "dagger: rounds must be >= 0"),
    ("tasks: [click-test]\ndagger: {expert_share: 2}\n", "dagger: expert_share must be in"),
    ("tasks: [click-test]\ndagger: {beta: 0.5}\n", "dagger: unknown field 'beta'"),
    ("tasks: [click-test]\ndagger: {rounds: 2}\neval_seed: 101\n", "eval_seed 101 is a DAgger round's seed block"),
])
def test_config_errors_are_one_line(tmp_path, yaml_text, says):
    p = tmp_path / "c.yaml"
    p.write_text(yaml_text)
    with pytest.raises(ConfigError, match=says):
        MiniWoBConfig.load(p)


def test_bc_overrides_reach_the_preset_and_the_table(tmp_path):
    """``sft`` replaces the preset's BC settings it names (a few-page check trains as many optimiser
    steps as the all-task run) and the table says so; without it the preset's are used."""
    p = tmp_path / "c.yaml"
    p.write_text("tasks: [click-test]\nsft: {epochs: 40, lr: 0.001}\npointer: {type_on_screen: true}\n")
    cfg = MiniWoBConfig.load(p)
    used, base = cfg.preset_used(), MiniWoBConfig(tasks=["click-test"]).preset_used()
    assert (used.sft.epochs, used.sft.lr, used.sft.batch_size) == (40, 0.001, base.sft.batch_size)
    assert base.sft.epochs == 10 and used.pointer.type_on_screen and not base.pointer.type_on_screen
    md = results_markdown(cfg, [], [], {}, {})
    assert 'BC overrides {"epochs": 40, "lr": 0.001}' in md
    assert "BC overrides" not in results_markdown(MiniWoBConfig(tasks=["click-test"]), [], [], {}, {})


def test_the_evaluation_seed_block_is_configurable_and_printed():
    """Settings are chosen on a validation block and reported on the table's (7)."""
    assert MiniWoBConfig(tasks=["click-test"]).eval_seed == 7
    md = results_markdown(MiniWoBConfig(tasks=["click-test"], methods=["bc"], eval_seed=3), [], [], {}, {})
    assert "fresh instances per task and method (seed block 3)" in md
    from navrl.tasks.registry import SuiteOptions, get_suite
    suite, opts = get_suite("miniwob"), SuiteOptions(names=("click-test",), phone="160x210@1")
    assert {t.seed for t in suite.tasks(4, 3, opts)}.isdisjoint(t.seed for t in suite.tasks(4, 7, opts))


def test_a_run_stopped_after_a_method_keeps_its_tables_marked_partial(tmp_path):
    """``run_miniwob`` writes its outputs after each method: a run stopped in RL keeps BC's rows and
    per-instance outcomes (another run compares paired to them), the table says what is missing."""
    from navrl.experiments.miniwob import write_outputs
    cfg = MiniWoBConfig(tasks=["click-test", "focus-text"], methods=["bc", "bc_rl", "rl"])
    rows = [{"method": "bc", "task": t, "n": 2, "successes": k, "success": k / 2, "ci_low": 0.1, "ci_high": 0.9,
             "masked": 0, "mean_length": 1.0} for t, k in (("click-test", 2), ("focus-text", 1))]
    outcomes = {("bc", "click-test"): {"a": True, "b": True}, ("bc", "focus-text"): {"c": True, "d": False}}
    write_outputs(cfg, rows, outcomes, {"throughput": {}, "pending": ["bc_rl", "rl"]}, tmp_path)
    md = (tmp_path / "results.md").read_text()
    assert "- **partial**: written after BC only; not measured (the run stopped or is still running): " \
           "BC + RL, RL only" in md
    assert "| click-test | 100 [10-90] | - | - |" in md and "| **mean** | **75.0** | - | - |" in md
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["outcomes"]["bc"] == {"click-test": {"a": True, "b": True}, "focus-text": {"c": True, "d": False}}
    assert res["outcomes"]["rl"] == {} and res["pending"] == ["bc_rl", "rl"] and res["comparisons"] == []
    write_outputs(cfg, rows, outcomes, {"throughput": {}, "pending": []}, tmp_path)     # complete: no such line
    assert "partial" not in (tmp_path / "results.md").read_text()


def test_anchor_table_reads_empty_cells_as_missing(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("task,wge,ccnet_bc\nclick-test,1.0,\nenter-text,,0.5\n")
    assert load_anchors(f) == {"click-test": {"wge": 1.0}, "enter-text": {"ccnet_bc": 0.5}}


def test_anchor_columns_without_a_value_for_the_runs_tasks_are_not_printed():
    """HTML-T5, WebGUM and WebN-T5 publish click-test (56 tasks each), not bisect-angle; nobody's
    QWeb or DOM-Q-NET cell is filled, so neither column is printed."""
    anchors = load_anchors(ANCHORS)
    assert {k: sum(k in a for a in anchors.values()) for k in ("html_t5", "webgum", "webn_t5", "qweb")} == \
        {"html_t5": 56, "webgum": 56, "webn_t5": 56, "qweb": 0}
    assert anchors["click-shades"]["html_t5"] == 0.0 and anchors["book-flight"]["webgum"] == 0.98
    cfg = MiniWoBConfig(tasks=["click-test", "bisect-angle"], methods=["bc"])
    md = results_markdown(cfg, [], [], {}, anchors)
    head = next(x for x in md.splitlines() if x.startswith("| task |"))
    assert head == "| task | BC only | CC-Net BC | CC-Net BC+RL | WebN-T5 | WebGUM | HTML-T5 |"
    assert "| bisect-angle | - | 29 | 97 |  |  |  |" in md
    assert "| **mean** | - | 64.5 (2 tasks) | 98.5 (2 tasks) | 100.0 (1 tasks) |" in md
    assert anchors_csv(cfg.tasks, anchors).splitlines() == [
        "task,ccnet_bc,ccnet_bc_rl,webn_t5,webgum,html_t5", "click-test,1.00,1.00,1.00,1.00,1.00",
        "bisect-angle,0.29,0.97,,,"]
    only = results_markdown(MiniWoBConfig(tasks=["click-test"], methods=["bc"]), [], [], {}, {})
    assert "| task | BC only |" in only and "| **mean** | - |" in only      # no anchors: no empty cells


def test_a_shipped_config_is_named_and_an_unknown_name_is_one_line(tmp_path, capsys):
    """``--config all`` is configs/miniwob_all.yaml (every task that runs); an unknown name exits
    2 with the shipped names, before anything is written."""
    from navrl.cli.cmd_experiment import CONFIGS
    from navrl.worlds.web.tasks import miniwob_group
    cfg = MiniWoBConfig.load(CONFIGS / "miniwob_all.yaml")
    assert cfg.tasks == list(miniwob_group("all")) and len(cfg.tasks) >= 80
    out = tmp_path / "never"
    assert main(["experiment", "miniwob", "--config", "everything", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'everything'" in err[0] and "all" in err[0] and not out.exists()


@needs_browser
def test_a_second_run_trains_bc_from_the_first_runs_demonstrations_file(tmp_path, capsys):
    """``demonstrations``: the first run collects and writes them, the next reads them instead of
    collecting (the same steps: the same BC planner, the same table); a file of other
    demonstrations is one line and exit 2, nothing written."""
    demos = tmp_path / "demos.jsonl.gz"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("preset: quick-pointer\ntasks: [click-test, focus-text]\nbc_episodes_per_task: 2\nmethods: [bc]\n"
                   "eval_episodes: 2\n"
                   f"pages: 2\nphone: 160x210@1\ndemonstrations: {demos}\n")
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(tmp_path / "a")]) == 0
    assert "scripted episodes of 2 tasks" in capsys.readouterr().out and demos.exists()
    from navrl.rl.demo_file import load_demonstrations
    header, steps = load_demonstrations(demos)
    assert header["tasks"] == ["click-test", "focus-text"] and {t.split(":")[1] for t, _ in steps} <= \
        {"click-test", "focus-text"}
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(tmp_path / "b")]) == 0
    assert f"demonstration steps of 2 tasks from {demos}" in capsys.readouterr().out
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("a", "b"))
    assert a["bc"]["demonstration_steps"] == b["bc"]["demonstration_steps"] == len(steps)
    assert (tmp_path / "a" / "bc" / "policy.pt").read_bytes() == (tmp_path / "b" / "bc" / "policy.pt").read_bytes()
    cfg.write_text(cfg.read_text().replace("bc_episodes_per_task: 2", "bc_episodes_per_task: 3"))
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(tmp_path / "c")]) == 2
    assert "demonstrations:" in capsys.readouterr().err and not (tmp_path / "c" / "results.json").exists()


@needs_browser
def test_dagger_labels_the_bc_planners_own_screens_and_a_stopped_run_resumes_with_them(tmp_path, capsys,
                                                                                      monkeypatch):
    """``dagger``: after BC the planner plays fresh instances, the scripts label the screens it
    reached, BC trains on again; the round's record is in results.json and results.md, its labels
    in ``dagger_labels.jsonl.gz``, BC's demonstrations in ``bc_demonstrations.jsonl.gz``. A run stopped
    in BC + RL resumes with ``--resume``: BC's rows and planner kept (not trained again), its
    demonstrations read (not collected again), BC + RL's PPO-ptx fits the saved labels too; a resume of
    another config, or of a finished run, is one line and exit 2."""
    import navrl.experiments.miniwob as mw
    from navrl.rl.demo_file import load_demonstrations
    cfg = tmp_path / "c.yaml"
    cfg.write_text("preset: quick-pointer\ntasks: [click-test, focus-text]\nbc_episodes_per_task: 2\n"
                   "methods: [bc, bc_rl]\nupdates: 1\neval_episodes: 2\npages: 2\nphone: 160x210@1\n"
                   "dagger: {rounds: 1, episodes_per_task: 2}\n"
                   "train: {rollout: {tasks_per_update: 2, rollouts_per_task: 2, max_steps: 4}, policy: {sft_coef: 1.0}}\n")
    out = tmp_path / "a"

    class Stopped(mw.Trainer):       # the session ends in BC + RL's first update
        def fit(self, *a, **k):
            raise KeyboardInterrupt
    monkeypatch.setattr(mw, "Trainer", Stopped)
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(out)]) == 130     # interrupted
    assert "DAgger round 1: the BC planner finished" in capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    [d] = res["dagger"]
    assert d["round"] == 1 and d["episodes"] + d["masked"] == 4 and 0 <= d["successes"] <= d["episodes"]
    assert d["labelled"] >= d["episodes"] and 0 <= d["disagreements"] <= d["labelled"]
    assert "- DAgger round 1: the BC planner finished" in (out / "results.md").read_text()
    header, labels = load_demonstrations(out / "dagger_labels.jsonl.gz")
    assert len(labels) == d["labelled"] and header["rounds"] == 1
    assert res["pending"] == ["bc_rl"] and {r["method"] for r in res["rows"]} == {"bc"}
    # the phases that ran to their end, timed (the stopped BC + RL training is not one of them)
    first = ["demonstrations", "BC training", "DAgger", "BC only's evaluation"]
    assert list(res["phases"]) == first and all(v > 0 for v in res["phases"].values())
    assert 0 < sum(res["phases"].values()) <= res["minutes"]
    _, demos = load_demonstrations(out / "bc_demonstrations.jsonl.gz")     # BC's, for a resumed PPO-ptx
    assert len(demos) == res["bc"]["demonstration_steps"]

    monkeypatch.undo()
    ptx: list = []
    real = mw.Trainer.__init__

    def spy(self, *a, sft_demos=None, **k):
        ptx.append(len(sft_demos or ()))
        real(self, *a, sft_demos=sft_demos, **k)
    monkeypatch.setattr(mw.Trainer, "__init__", spy)
    planner = (out / "bc" / "policy.pt").read_bytes()
    (out / "bc_rl").mkdir(exist_ok=True)
    (out / "bc_rl" / "metrics.jsonl").write_text('{"update": 7, "stale": true}\n')   # the stopped training's
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(out)]) == 2      # no --resume
    assert "--resume to continue it" in capsys.readouterr().err
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(out), "--resume"]) == 0
    log = capsys.readouterr().out
    assert "resuming" in log and f"{d['labelled']} DAgger labels from" in log and "DAgger round" not in log
    # the scripts are not played again: the stopped run's demonstrations are read
    assert f"BC: {len(demos)} demonstration steps of 2 tasks from {out / 'bc_demonstrations.jsonl.gz'}" in log
    assert "scripted episodes" not in log
    again = json.loads((out / "results.json").read_text())
    assert ptx == [res["bc"]["demonstration_steps"] + d["labelled"]]
    assert (out / "bc" / "policy.pt").read_bytes() == planner and again["pending"] == []
    assert [r for r in again["rows"] if r["method"] == "bc"] == res["rows"]
    assert {r["task"] for r in again["rows"] if r["method"] == "bc_rl"} == {"click-test", "focus-text"}
    from navrl.rl.metrics import read_metrics
    assert [r.get("stale") for r in read_metrics(out / "bc_rl")] == [None] * len(read_metrics(out / "bc_rl")) != []
    assert again["dagger"] == res["dagger"] and again["resumed"]["done"] == ["bc"]
    assert list(again["phases"]) == first + ["BC + RL training", "BC + RL's evaluation"]
    assert {k: again["phases"][k] for k in first} == res["phases"]
    assert "- minutes by phase: demonstrations " in (out / "results.md").read_text()
    assert "- resumed: BC only measured by the stopped run" in (out / "results.md").read_text()
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(out), "--resume"]) == 2
    assert "finished run" in capsys.readouterr().err
    cfg.write_text(cfg.read_text().replace("eval_episodes: 2", "eval_episodes: 3"))
    assert main(["experiment", "miniwob", "--config", str(cfg), "--out", str(out), "--resume"]) == 2
    assert "ran another config (eval_episodes: 2, not 3)" in capsys.readouterr().err
