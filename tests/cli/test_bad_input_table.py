"""Malformed command lines and files, table-driven: each gives exit code 2, at most 5 lines on
stderr (the first 'navrl: error: ...'), no traceback, and starts no work."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from navrl.cli.main import main

GOOD_YAML = "preset: quick\nupdates: 2\neval_at: [0, 2]\neval_episodes: 4\nsuites: [test-ios]\n" \
            "methods: [{name: PPO, estimator: ppo}]\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Files the cases point at: an SFT policy, a run with a checkpoint, damaged metrics files."""
    from navrl.experiments.pipeline import build_tiny_policy, save_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    d = tmp_path_factory.mktemp("bad-input")
    quick = get_preset("quick")
    policy = build_tiny_policy(quick)
    sft = save_policy(policy, d / "sft" / "sft.pt")
    run = d / "run"
    tr = Trainer(policy, quick.train, run)
    tr.logger.log({"kind": "update", "update": 1, "success": 0.5, "masked_fraction": 0.0})
    tr.save_checkpoint()
    (d / "file.txt").write_text("I am a file\n")
    (d / "corrupt.pt").write_bytes(b"not a checkpoint")
    (d / "empty").mkdir()
    for name, data in (("m-list", b"[1, 2, 3]\n"), ("m-binary", bytes(range(256)) * 8),
                       ("m-fields", b'{"kind": "update"}\n{"kind": "update", "update": 2}\n'),
                       ("m-string", b'"hello"\n{"kind": "update", "update": 1}\n')):
        (d / name).mkdir()
        (d / name / "metrics.jsonl").write_bytes(data)
    (d / "m-dir" / "metrics.jsonl").mkdir(parents=True)
    (d / "evalrun").mkdir()
    (d / "evalrun" / "results.json").write_text("{}")
    yamls = {
        "syntax": "preset: quick\nupdates: [2\n",
        "updates-abc": GOOD_YAML.replace("updates: 2", "updates: abc"),
        "eval-at-5": GOOD_YAML.replace("eval_at: [0, 2]", "eval_at: 5"),
        "eval-at-range": GOOD_YAML.replace("eval_at: [0, 2]", "eval_at: [0, 9]"),
        "episodes-neg": GOOD_YAML.replace("eval_episodes: 4", "eval_episodes: -1"),
        "updates-zero": GOOD_YAML.replace("updates: 2", "updates: 0").replace("[0, 2]", "[0]"),
        "unknown-key": GOOD_YAML + "learning_rate: 3\n",
        "unknown-suite": GOOD_YAML.replace("[test-ios]", "[test-mars]"),
        "no-methods": GOOD_YAML.replace("methods: [{name: PPO, estimator: ppo}]", "methods: []"),
        "bad-estimator": GOOD_YAML.replace("estimator: ppo", "estimator: sarsa"),
        "method-typo": GOOD_YAML.replace("estimator: ppo", "estimater: ppo"),
        "updates-float": GOOD_YAML.replace("updates: 2", "updates: 2.5"),
        "a-list": "- 1\n- 2\n",
        "dup-names": GOOD_YAML.replace("methods: [{name: PPO, estimator: ppo}]",
                                       "methods: [{name: PPO, estimator: ppo}, {name: ppo, estimator: grpo}]"),
    }
    for k, v in yamls.items():
        (d / f"{k}.yaml").write_text(v)
    (d / "binary.yaml").write_bytes(b"\xff\xfe\x00\x01binary")
    return {"D": str(d), "SFT": str(sft), "RUN": str(run), "FILE": str(d / "file.txt")}


def _cases():
    S, R, F, D = "{SFT}", "{RUN}", "{FILE}", "{D}"
    tq = ["train", "--preset", "quick", "--init", S]
    new = ["--out", D + "/new"]
    cases = [
        # train
        ["train", "--out", F],
        ["train", "--out", "/proc/1/x"],
        tq + ["--out", F],
        ["train", "--preset", "nope", "--init", S] + new,
        ["train", "--preset", "quick", "--init", D + "/missing.pt"] + new,
        ["train", "--preset", "quick", "--init", D + "/corrupt.pt"] + new,
        ["train", "--preset", "quick", "--resume", "--out", D + "/empty"],
        tq + ["--set", "advantage.gamma=7"] + new,
        tq + ["--set", "nosuchfield=1"] + new,
        tq + ["--set", "clip_eps=0.28"] + new,              # a flat name of before the config's sections
        tq + ["--set", "run.num_updates=abc"] + new,
        tq + ["--set", "run.eval_suites=5"] + new,
        tq + ["--set", "policy.policy_lr=true"] + new,
        tq + ["--set", "gamma"] + new,
        tq + ["--updates", "-1"] + new,
        tq + ["--updates", "abc"] + new,
        tq + ["--seed", "1.5"] + new,
        tq + ["--max-masked-updates", "-1"] + new,
        tq + ["--faults", "device_lost=-0.1"] + new,
        tq + ["--faults", "nosuch=0.1"] + new,
        tq + ["--faults", "device_lost"] + new,
        tq + ["--faults", "app_never_loads=2"] + new,
        tq + ["--out", R],                                   # already holds a run
        ["train", "--preset", "quick", "--resume", "--estimator", "gigppo", "--out", R],
        ["train", "--preset", "quick", "--resume", "--reward", "cautionary", "--out", R],
        ["train", "--preset", "quick", "--resume", "--overwrite", "--out", R],
        tq + ["--estimator", "sarsa"] + new,
        # sft
        ["sft", "--preset", "quick", "--out", F],
        ["sft", "--preset", "bogus", "--out", D + "/new-sft"],
        ["sft", "--preset", "quick", "--out", "/proc/1/x"],
        ["sft", "--preset", "quick", "--seed", "x"],
        ["sft", "--preset", "quick", "--out", D + "/sft"],  # holds sft.pt
        # eval
        ["eval", "-n", "2", "--out", F],
        ["eval", "-n", "2", "--out", "/proc/1/x"],
        ["eval", "-n", "0"] + new,
        ["eval", "-n", "-3"] + new,
        ["eval", "--batch", "0"] + new,
        ["eval", "--suite", "nosuch"] + new,
        ["eval", "-n", "2", "--faults", "device_lost=2"] + new,
        ["eval", "-n", "2", "--out", D + "/evalrun"],
        ["eval", "--agent", "gpt"] + new,
        # play
        ["play", "--task", "shop_checkout:1", "--out", F],
        ["play", "--task", "nosuch:1"] + new,
        ["play", "--task", "shop_checkout:x"] + new,
        ["play", "--index", "-1"] + new,
        ["play", "--suite", "nosuch"] + new,
        ["play", "--suite", "train", "--tasks", "nosuch_template"] + new,
        ["play", "--task", "shop_checkout:1", "--faults", "app_never_loads=1.5"] + new,
        ["play", "--task", "shop_checkout:1", "--out", R],   # a training run is not play output
        # report
        ["report", R, "--out", "/proc/1/r.html"],
        ["report", R, "--out", D],
        ["report", D + "/m-list"],
        ["report", D + "/m-binary"],
        ["report", D + "/m-dir"],
        ["report", D + "/m-fields"],
        ["report", D + "/m-string"],
        ["report", D + "/nothing-here"],
        ["report", F],
        # demo
        ["demo", "--preset", "nosuch", "--out", D + "/demo"],
        ["demo", "--out", F],
        # experiment
        ["experiment", "paper-table", "--out", F],
        ["experiment", "paper-table", "--config", D + "/missing.yaml", "--out", D + "/pt"],
        ["experiment", "paper-table", "--config", D + "/binary.yaml", "--out", D + "/pt"],
    ]
    for k in ("syntax", "updates-abc", "eval-at-5", "eval-at-range", "episodes-neg", "updates-zero", "unknown-key",
              "unknown-suite", "no-methods", "bad-estimator", "method-typo", "updates-float", "a-list", "dup-names"):
        cases.append(["experiment", "paper-table", "--config", f"{D}/{k}.yaml", "--out", D + "/pt"])
    cases += [["tasks", "--nosuch"], ["nosuchcommand"], ["tasks", "--suite", "nosuch"],
              ["synth-tasks", "export", D + "/m-binary/metrics.jsonl", "--out", D + "/s.json"],
              ["synth-tasks", "export", F, "--out", D + "/s.json"],
              ["synth-tasks", "export", F, "--out", "/proc/1/x.json"],
              ["synth-tasks", "review", D + "/m-binary/metrics.jsonl", "--accept-all"],
              ["synth-tasks", "generate", "--pairs", "-3", "--out", D + "/o.jsonl"]]
    return cases


CASES = _cases()


def test_the_table_is_large_enough():
    assert len(CASES) >= 40


def test_fault_rates_are_checked_by_the_library_too():
    from navrl.worlds.phone.sim import FaultConfig
    for bad in (dict(device_lost=-0.1), dict(app_never_loads=1.5), dict(device_lost=float("nan")),
                dict(lose_at_step=-1), dict(device_lost="0.1")):
        with pytest.raises(ValueError):
            FaultConfig(**bad)
    assert FaultConfig(device_lost=0.1, app_never_loads=0.05).any


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c).replace("{", "").replace("}", "")[:70] for c in CASES])
def test_bad_input_is_one_short_line_and_exit_2(argv, env, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = [a.format(**env) for a in argv]
    before = open(env["FILE"]).read()
    try:
        rc = main(args)
    except SystemExit as e:          # argparse
        rc = e.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, (args, err)
    assert "Traceback" not in err
    assert 1 <= len(lines) <= 5 and lines[-1].startswith("navrl: error:"), (args, err)
    assert open(env["FILE"]).read() == before                 # nothing written over the file
    assert not (tmp_path / "runs").exists() or args[0] in ("demo",)


@pytest.mark.parametrize("argv", [
    ["train", "--out", "{FILE}"],
    ["report", "{D}/m-binary"],
    ["experiment", "paper-table", "--config", "{D}/updates-abc.yaml", "--out", "{D}/pt2"],
])
def test_real_cli_process(argv, env):
    r = subprocess.run([sys.executable, "-m", "navrl.cli.main", *[a.format(**env) for a in argv]],
                       capture_output=True, text=True, timeout=120)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("navrl: error:"), r.stderr


def test_report_skips_a_torn_last_line_with_a_warning(env, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(env["RUN"], run)
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b'{"kind": "update", "upd\x00\x00')
    r = subprocess.run([sys.executable, "-m", "navrl.cli.main", "report", str(run)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("navrl: WARNING:") and "truncated" in err[0]
    assert (run / "report.html").stat().st_size > 1000


def test_overwrite_replaces_a_run_and_play_leaves_no_stale_frames(env, tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["play", "--task", "shop_checkout:1", "--out", str(out)]) == 0
    n1 = len(list((out / "frames").rglob("*.png")))
    (out / "frames" / "0000" / "99.png").write_bytes(b"stale")
    assert main(["play", "--task", "settings_toggle:0", "--no-perturb", "--out", str(out)]) == 0
    frames = sorted(p.name for p in (out / "frames").rglob("*.png"))
    assert "99.png" not in frames and 0 < len(frames)
    traj = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    assert traj["task"]["template"] == "settings_toggle" and n1 > 0
    ev = tmp_path / "ev"
    assert main(["eval", "-n", "2", "--out", str(ev)]) == 0
    assert main(["eval", "-n", "2", "--out", str(ev)]) == 2
    assert main(["eval", "-n", "3", "--out", str(ev), "--overwrite"]) == 0
    assert json.loads((ev / "results.json").read_text())["n"] == 3
