"""Issue #31, "the first hour of a new user": each point checked as a user meets it, through
``python -m navrl`` (the ``navrl`` entry point's module) where a command is involved."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import run_navrl
from navrl.cli.main import main


def navrl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``navrl ARGS`` as a user runs it: the entry point's ``main``, in this interpreter
    (``clirun``); ``--version`` below starts the real ``python -m navrl``."""
    return run_navrl(*args, cwd=cwd)


@pytest.fixture(scope="module")
def train_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A plain ``navrl train`` run: the tiny preset, one update, from scratch."""
    out = tmp_path_factory.mktemp("first-hour") / "run"
    r = navrl("train", "--preset", "quick-pointer", "--updates", "1", "--seed", "7", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out, r


# ---------------------------------------------------------------- 1. version and provenance
HEX = re.compile(r"^[0-9a-f]{40}(-dirty)?$")


def test_navrl_version_names_version_and_commit(tmp_path):
    from navrl import __version__
    r = subprocess.run([sys.executable, "-m", "navrl", "--version"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"navrl (\S+) \(commit (\S+), python \S+\)\n", r.stdout)
    assert m, r.stdout
    assert m.group(1) == __version__
    assert HEX.match(m.group(2)) or m.group(2) == "unknown"


def test_the_command_line_answers_without_importing_torch(tmp_path):
    """`navrl --help`, `--version`, `--list-presets` and refused input never need torch (seconds
    to import): the parser is built from the presets' configs, which live apart from the models."""
    code = ("import sys; from navrl.cli.main import build_parser, main; build_parser()\n"
            "rc = main(['train', '--out', sys.argv[1]])\n"
            "print(rc, sorted(m for m in ('torch', 'matplotlib', 'transformers') if m in sys.modules))")
    (tmp_path / "f").write_text("x")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "f")], capture_output=True, text=True, timeout=300)
    assert r.stdout.split("\n")[-2] == "2 []", (r.stdout, r.stderr)


def test_commit_is_navrls_own_checkout_not_the_current_directorys(tmp_path, monkeypatch):
    from navrl.provenance import PACKAGE_DIR, git_commit
    other = tmp_path / "other-repo"
    other.mkdir()
    for cmd in (["init", "-q"], ["-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(other), *cmd], check=True, capture_output=True)
    others = subprocess.run(["git", "-C", str(other), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(other)
    ours = subprocess.run(["git", "-C", str(PACKAGE_DIR), "rev-parse", "HEAD"], capture_output=True, text=True)
    got = git_commit()
    assert not got.startswith(others)
    if ours.returncode == 0:
        assert got.startswith(ours.stdout.strip())
    # a navrl copied into another repository (untracked there), or outside any checkout: "unknown", never ""
    (other / "navrl").mkdir()
    (other / "navrl" / "__init__.py").write_text("")
    assert git_commit(other / "navrl") == "unknown"
    bare = tmp_path / "no-git" / "navrl"
    bare.mkdir(parents=True)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_commit(bare) == "unknown"


def test_config_digest_is_stable_and_tells_configs_apart():
    from navrl.provenance import config_digest
    from navrl.rl.presets import get_preset
    a, b = get_preset("quick-pointer").train, get_preset("quick-pointer", {"run.seed": 1}).train
    assert config_digest(a) == config_digest(get_preset("quick-pointer").train)
    assert config_digest(a) != config_digest(b)
    assert re.fullmatch(r"[0-9a-f]{16}", config_digest({"x": [1, 2]}))


def _check_provenance(p: dict, seed) -> None:
    from navrl import __version__
    assert p["navrl_version"] == __version__
    assert HEX.match(p["commit"]) or p["commit"] == "unknown"
    assert p["seed"] == seed
    assert re.fullmatch(r"[0-9a-f]{16}", p["config_digest"])


def test_train_summary_records_provenance(train_run):
    out, _ = train_run
    s = json.loads((out / "summary.json").read_text())
    _check_provenance(s["provenance"], 7)
    assert s["updates"] == 1 and set(s["final_evaluation"]) >= {"test-ios"}
    assert isinstance(s["minutes"], float) and s["minutes"] == round(s["minutes"], 1)


def test_eval_results_record_provenance(tmp_path):
    r = navrl("eval", "--suite", "test-ios", "-n", "2", "--seed", "3", "--out", str(tmp_path / "e"))
    assert r.returncode == 0, r.stderr
    p = json.loads((tmp_path / "e" / "results.json").read_text())["provenance"]
    _check_provenance(p, 3)
    assert p["evaluated"]["suite"] == "test-ios" and p["evaluated"]["agent"] == "expert"


# ---------------------------------------------------------------- 2. presets listed, named for what they are
def test_list_presets_says_what_each_is():
    from navrl.rl.presets import PRESETS
    r = navrl("train", "--list-presets")
    assert r.returncode == 0, r.stderr
    for name in PRESETS:
        assert re.search(rf"^{re.escape(name)}\b.*: ", r.stdout, re.M), name
    assert r.stdout.startswith("demo (default): ")
    assert "design, alias default: " in r.stdout and "not the default" in r.stdout
    assert "final evaluation 192 episodes x 3 suites" in r.stdout   # the long phase the demo preset ends with
    for cmd in ("sft", "demo"):
        assert navrl(cmd, "--list-presets").stdout == r.stdout


def test_readme_has_the_presets_table():
    from navrl.rl.presets import presets_markdown
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert presets_markdown() in readme


def test_default_is_the_old_name_of_design():
    from navrl.rl.presets import get_preset
    assert get_preset("default").name == "design" == get_preset("design").name
    assert get_preset("demo").name == "demo"


# ---------------------------------------------------------------- --resume: the run's own preset, config, demonstrations
@pytest.fixture(scope="module")
def sft_pt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("first-hour-sft") / "sft"
    r = navrl("sft", "--preset", "quick-pointer", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out / "sft.pt"


def _ptx_run(sft_pt: Path, out: Path, updates: int) -> None:
    """quick-pointer with PPO-ptx on (its demonstrations: the preset's 12 SFT tasks)."""
    r = navrl("train", "--preset", "quick-pointer", "--init", str(sft_pt), "--updates", str(updates),
              "--set", "policy.sft_coef=1", "--out", str(out))
    assert r.returncode == 0, r.stderr


def test_resume_refuses_another_preset_or_config_in_one_line(sft_pt, tmp_path):
    run = tmp_path / "run"
    _ptx_run(sft_pt, run, 1)
    saved = json.loads((run / "parts.json").read_text())
    assert saved["preset"] == "quick-pointer" and saved["sft_demo_tasks"] == 12
    r = navrl("train", "--resume", "--preset", "demo", "--out", str(run))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"navrl: error: --resume: the run in {run} was trained with --preset quick-pointer, not demo; "
                        "drop --preset (or give the same), or start a new run with another --out\n")
    r = navrl("train", "--resume", "--set", "policy.policy_lr=0.1", "--seed", "3", "--out", str(run))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert (f"the run in {run} was trained with policy.policy_lr=0.001 (not 0.1), run.seed=0 (not 3); only "
            "run.num_updates, run.eval_every, run.eval_episodes, run.checkpoint_every, run.max_masked_updates may "
            "change on resume") in r.stderr, r.stderr
    assert not (run / "checkpoints" / "update_00002.pt").exists()


def test_a_resumed_run_reproduces_the_uninterrupted_ones_demonstrations(sft_pt, tmp_path):
    """Resumed without --preset (what a user types), PPO-ptx's demonstrations are the saved
    run's (12 tasks), not the default preset's 600: the parameters end bitwise equal."""
    import torch
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _ptx_run(sft_pt, whole, 2)
    _ptx_run(sft_pt, cut, 1)
    r = navrl("train", "--resume", "--updates", "2", "--out", str(cut))
    assert r.returncode == 0, r.stderr
    assert json.loads((cut / "summary.json").read_text())["preset"] == "quick-pointer"
    a, b = (torch.load(d / "checkpoints" / "update_00002.pt", weights_only=False)["policy"] for d in (whole, cut))

    def same(x, y) -> bool:
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        return torch.equal(x, y) if torch.is_tensor(x) else x == y
    assert same(a, b)


# ---------------------------------------------------------------- 3. long phases say what they are, with progress
def test_train_announces_its_final_evaluation_with_a_progress_bar(train_run):
    _, r = train_run
    assert re.search(r"^final evaluation of the trained planner \(greedy\): test-ios 4, test-android 4, "
                     r"test-unseen 4 episodes \(12 in all; --set run.eval_episodes=N sizes it\)$", r.stdout, re.M), r.stdout
    m = re.search(r"^final evaluation \(12 episodes; steps, at most\) .* (\d+)/(\d+)", r.stdout, re.M)
    assert m and m.group(1) == m.group(2), r.stdout


def test_progress_bar_never_counts_past_its_total(capsys):
    from navrl.cli.progress import bar
    with bar("x", 5) as adv:
        adv(3)
        adv(4)
    assert "5/5" in capsys.readouterr().out


TIMES = re.compile(r" \d+:\d\d:\d\d( (\d+:\d\d:\d\d|-:--:--))?$")


def test_progress_bars_keep_their_time_columns_whole_at_80_columns():
    """A long description and info line give way ('…'); the elapsed and remaining times never do."""
    import io

    from rich.console import Console

    from navrl.cli.progress import bar
    buf = io.StringIO()
    with bar("final evaluation (576 episodes; steps, at most)", 11000, console=Console(file=buf, width=80)) as adv:
        adv(5000, info="success 100%  return +10.23  len 12.3  (critic warm-up)")
    (line,) = buf.getvalue().splitlines()
    assert len(line) <= 80 and "5000/11000" in line and "…" in line, line
    assert TIMES.search(line), line


def test_eval_progress_at_80_columns_as_a_user_sees_it(tmp_path):
    r = run_navrl("eval", "--suite", "test-unseen", "-n", "2", "--out", str(tmp_path / "e"), env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if "━" in x]
    assert line.startswith("expert on test-unseen (2 episodes; steps, at most)"), line
    assert len(line) <= 80 and TIMES.search(line), line
    assert "upper bound" not in r.stdout


def test_tasks_shows_whole_template_names_at_80_columns():
    from navrl.tasks.registry import get_suite
    for suite in ("train", "test-unseen"):
        r = run_navrl("tasks", "--suite", suite, env={"COLUMNS": "80"})
        assert r.returncode == 0, r.stderr
        assert max(len(x) for x in r.stdout.splitlines()) <= 80
        shown = {x.split("│")[1].strip() for x in r.stdout.splitlines() if x.startswith("│")}
        names = {row["template"] for row in get_suite(suite).describe()}
        assert names <= shown, sorted(names - shown)[:3]


# ---------------------------------------------------------------- --tasks: a subset of a phone-world suite too
def test_tasks_selects_phone_world_templates(tmp_path):
    r = navrl("eval", "--suite", "test-ios", "--tasks", "bank_balance,bank_pay_payee", "-n", "4", "--out",
              str(tmp_path / "e"))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in (tmp_path / "e" / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(t["task"]["template"] for t in rows) == ["bank_balance", "bank_balance", "bank_pay_payee",
                                                           "bank_pay_payee"]
    r = navrl("eval", "--suite", "test-ios", "--tasks", "bank_balance,nope", "--out", str(tmp_path / "bad"))
    assert r.returncode == 2 and not (tmp_path / "bad").exists()
    assert r.stderr == ("navrl: error: --tasks nope: not a template of suite test-ios "
                        "(`navrl tasks --suite test-ios` lists them)\n")


def test_tasks_restricts_what_online_rl_draws():
    import random

    from navrl.tasks.registry import SuiteOptions, get_suite
    src = get_suite("train").source(SuiteOptions(names=("bank_balance", "notes_create")))
    assert {t.template for t in src.sample(16, random.Random(0))} == {"bank_balance", "notes_create"}


# ---------------------------------------------------------------- 4. small inconsistencies
ONE_TASK_WEB_SUITE = """name: one
tasks:
  - id: tap-it
    goal: Tap the button.
    start_url: http://127.0.0.1:9/index.html
    success: "return false;"
    max_steps: 2
"""


def test_a_capped_episode_count_is_said_in_one_line(tmp_path):
    from navrl.tasks.registry import get_suite
    why = get_suite("miniwob").available()
    if why:
        pytest.skip(f"web suites need the browser device: {why}")
    suite = tmp_path / "one.yaml"
    suite.write_text(ONE_TASK_WEB_SUITE)
    r = navrl("eval", "--suite", f"web:{suite}", "--agent", "random", "-n", "4", "--out", str(tmp_path / "e"))
    notes = [x for x in r.stderr.splitlines() if "-n 4" in x]
    assert notes == [f"navrl: note: -n 4: --suite web:{suite} has 1 task; evaluating 1 episode"], r.stderr


def _subcommands():
    from navrl.cli.main import build_parser
    import argparse

    def walk(p, path):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, p
        for a in subs:
            for name, q in a.choices.items():
                yield from walk(q, path + (name,))
    return list(walk(build_parser(), ()))


REWRITTEN = {("report",): "report.html is derived from the run: rewritten each time",
             ("synth-tasks", "export"): "the suite file is derived from the review file: rewritten each time"}


def test_every_command_that_keeps_an_output_takes_overwrite():
    for path, p in _subcommands():
        flags = {s for a in p._actions for s in a.option_strings}
        if "--out" in flags and path not in REWRITTEN:
            assert "--overwrite" in flags, " ".join(path)


def test_synth_generate_force_is_a_deprecated_overwrite(tmp_path, monkeypatch):
    review = tmp_path / "r.jsonl"
    review.write_text("keep me\n")
    r = navrl("synth-tasks", "generate", "--out", str(review))
    assert r.returncode == 2 and "use --overwrite to replace it" in r.stderr
    env_free = navrl("synth-tasks", "generate", "--out", str(review), "--force", "--base-url", "http://127.0.0.1:9/v1",
                     "--model", "m", "--max-retries", "0", "--timeout", "2")
    assert "navrl: note: --force is deprecated: use --overwrite" in env_free.stderr
    assert "exists" not in env_free.stderr          # it went past the check, as --overwrite does
    assert review.read_text() == "keep me\n"        # the teacher failed: nothing written


def test_demo_refuses_another_commands_run_without_overwrite(tmp_path):
    out = tmp_path / "d"
    out.mkdir()
    (out / "metrics.jsonl").write_text("")
    r = navrl("demo", "--expert-only", "--out", str(out))
    assert r.returncode == 2 and "already holds a run" in r.stderr and "--overwrite" in r.stderr
    assert navrl("demo", "--expert-only", "--out", str(out), "--overwrite").returncode == 0
    assert navrl("demo", "--expert-only", "--out", str(out)).returncode == 0   # its own earlier demo: replaced


def test_play_takes_the_suites_tasks_named_by_tasks(tmp_path):
    """``--suite S --tasks A,B --index N``: instance N of those tasks (not of the whole suite)."""
    for i in (0, 1):
        r = navrl("play", "--suite", "train", "--tasks", "notes_read", "--index", str(i), "--out", str(tmp_path / str(i)))
        assert r.returncode == 0, r.stderr
        assert "task: train:notes_read:" in r.stdout, r.stdout


def test_play_policy_watches_a_trained_planner(train_run, tmp_path):
    run, _ = train_run
    out = tmp_path / "watch"
    r = navrl("play", "--policy", str(run), "--task", "shop_checkout:3", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert f"planner: the trained planner of {run} (greedy)" in r.stdout
    assert (out / "filmstrip.png").stat().st_size > 0 and (out / "trajectories.jsonl").exists()
    bad = navrl("play", "--policy", str(tmp_path / "nope"), "--out", str(tmp_path / "p"))
    assert bad.returncode == 2 and bad.stderr.startswith("navrl: error: --policy: ")


def test_a_bad_set_lists_the_valid_fields(tmp_path):
    from navrl.cli.common import config_field_names
    from navrl.rl.config import TrainConfig
    r = navrl("train", "--preset", "quick-pointer", "--set", "polcy_lr=1e-4", "--out", str(tmp_path / "r"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "not a TrainConfig field (did you mean policy.policy_lr" in r.stderr
    listed = r.stderr.split("valid fields: ", 1)[1].strip().split(", ")
    assert listed == config_field_names(TrainConfig) and "policy_lr" in " ".join(listed)


def test_field_names_are_read_from_the_config_class_flat_or_in_sections():
    from dataclasses import dataclass, field

    from navrl.cli.common import config_field_names

    @dataclass
    class Optim:
        lr: float = 1e-3
        clip: float = 0.2

    @dataclass
    class Grouped:
        optim: Optim = field(default_factory=Optim)
        seed: int = 0

    assert config_field_names(Grouped) == ["optim.lr", "optim.clip", "seed"]
    assert config_field_names(Optim) == ["lr", "clip"]


REFUSED = [
    ["train", "--preset", "quick", "--set", "foo=1"],
    ["train", "--preset", "nope"],
    ["train", "--preset", "quick", "--init", "missing.pt"],
    ["sft", "--preset", "bogus"],
    ["demo", "--preset", "nosuch"],
    ["play", "--policy", "missing.pt"],
    ["eval", "--suite", "no-such-suite"],
    ["eval", "--episodes", "0"],
    ["experiment", "paper-table", "--config", "missing.yaml"],
    ["judge", "audit", "--judge", "nope"],
]


@pytest.mark.parametrize("argv", REFUSED, ids=lambda a: " ".join(a))
def test_a_refused_command_leaves_no_empty_output_folder(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "new" / "deeper" / "out"
    assert main([*argv, "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("navrl: error: ")
    assert not (tmp_path / "new").exists()


def test_a_refused_command_keeps_a_folder_the_user_made_and_leaves_none_it_made(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    r = navrl("train", "--set", "foo=1", "--out", str(mine))
    assert r.returncode == 2 and mine.is_dir()
    r = navrl("synth-tasks", "generate", "--pairs", "0", "--out", str(tmp_path / "a" / "b" / "r.jsonl"))
    assert r.returncode == 2 and not (tmp_path / "a").exists()


# ---------------------------------------------------------------- 5. Gymnasium
FRESH = """
import sys
import gymnasium
assert "navrl" not in sys.modules
env = gymnasium.make("navrl/PhoneWorld-v0", task="shop_checkout:3")
obs, info = env.reset(seed=0)
print(sorted(obs), obs["screenshot"].shape, info["task_id"])
assert not any(getattr(f, "navrl_gymnasium_hook", False) for f in sys.meta_path)  # fired once, gone
loader = gymnasium.__spec__.loader                                                 # gymnasium's own
assert gymnasium.__loader__ is loader and type(loader).__name__ != "_RegisteringLoader"
import navrl                                       # registers again: silently, the id is there
env = gymnasium.make("navrl:navrl/PhoneWorld-v0", task="shop_checkout:3", perturb=False)
print(env.reset(seed=0)[1]["task_id"])
"""


def test_gymnasium_make_in_a_fresh_interpreter_without_importing_navrl():
    """The issue's command, as a user runs it: a new interpreter of this environment, gymnasium
    imported, navrl not. Only the installed ``_navrl_gymnasium.pth`` can register the id there, so
    this fails where navrl was installed before it existed (``pip install -e .`` again: setup.py)."""
    r = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=120)
    assert "NamespaceNotFound" not in r.stderr, f"_navrl_gymnasium.pth is not installed in {sys.prefix}: {r.stderr}"
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["['goal', 'screenshot', 'ui'] (640, 320, 3) train:shop_checkout:ios:3",
                                     "train:shop_checkout:ios:3"]
    assert "Overriding environment" not in r.stderr, r.stderr


def test_gymnasium_entry_point_registers_the_env():
    from importlib.metadata import entry_points

    import gymnasium as gym
    declared = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '[project.entry-points."gymnasium.envs"]\nnavrl = "navrl:register_envs"' in declared
    installed = [e for e in entry_points(group="gymnasium.envs") if e.name == "navrl"]
    fn = installed[0].load() if installed else __import__("navrl").register_envs   # installed before it existed
    gym.registry.pop("navrl/PhoneWorld-v0", None)
    fn()
    assert "navrl/PhoneWorld-v0" in gym.registry
    env = gym.make("navrl/PhoneWorld-v0", suite="test-android", task="shop_checkout:3")
    assert env.reset(seed=0)[1]["task_id"] == "test-android:shop_checkout:android:3"


def test_env_task_string_errors_are_clear():
    from navrl.worlds.phone.env import PhoneWorldEnv
    with pytest.raises(ValueError, match="use TEMPLATE"):
        PhoneWorldEnv(task="shop_checkout:x")
    with pytest.raises(ValueError, match="unknown suite 'nope'; choose from train"):
        PhoneWorldEnv(suite="nope")


# ---------------------------------------------------------------- 6. the report of a plain navrl train run
def test_a_train_runs_report_in_headless_chromium(train_run, tmp_path):
    run, _ = train_run
    assert (run / "filmstrips").is_dir() and list((run / "filmstrips").glob("*.png"))   # train writes filmstrips now
    r = navrl("report", str(run), "--out", str(tmp_path / "report.html"))
    assert r.returncode == 0, r.stderr
    try:
        from playwright.sync_api import sync_playwright

        from navrl.device.browser.chromium import find_chromium
        exe = find_chromium()
    except Exception as e:   # no playwright or no Chromium on this machine
        pytest.skip(f"headless Chromium unavailable: {e}")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto((tmp_path / "report.html").as_uri())
            shown = page.evaluate("""() => ({
                h2: [...document.querySelectorAll('h2')].map(h => h.textContent),
                images: [...document.images].map(i => [i.className, i.complete && i.naturalWidth > 0]),
                rows: [...document.querySelectorAll('table tr')].map(r => r.textContent),
                absent: [...document.querySelectorAll('.absent')].map(e => e.textContent.trim()),
            })""")
        finally:
            browser.close()
    assert "Learning curves" in shown["h2"] and any(h.startswith("Latest evaluation") for h in shown["h2"])
    assert all(ok for _, ok in shown["images"]) and len(shown["images"]) >= 2          # curves + a filmstrip
    assert any(cls == "filmstrip" for cls, _ in shown["images"])
    assert any(row.startswith("test-ios") for row in shown["rows"])                    # the evaluation table
    assert shown["absent"] and all(len(t) > 10 for t in shown["absent"])               # each absence says why
    assert any("No SFT-vs-RL table" in t for t in shown["absent"])


def test_report_panels_say_why_they_are_empty():
    from navrl.report.html import panel_absent_reason
    assert "critic-free" in panel_absent_reason("critic/loss", [{"update": 1, "success": 0.5}])
    assert "warm-up" in panel_absent_reason("policy/approx_kl", [{"update": 1, "policy_frozen": True}])


# ---------------------------------------------------------------- setup: where the CLI lives, what make setup does
ROOT = Path(__file__).resolve().parents[2]


def test_readme_says_where_the_cli_lives_and_web_md_installs_from_a_checkout():
    readme = (ROOT / "README.md").read_text()
    assert "source .venv/bin/activate" in readme and ".venv/bin/navrl" in readme
    web = (ROOT / "docs" / "web.md").read_text()
    assert "pip install 'navrl[browser]'" not in web and "pip install -e '.[browser]'" in web


def test_make_setup_says_it_runs_apt_as_root_before_it_does(tmp_path):
    """make setup as root on Debian without Chromium (id, apt-get stubbed; python missing stops it
    after the apt step): its first line says what apt-get is about to install, then apt-get runs."""
    import os
    import shutil
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make")
    for f in ("Makefile", "pyproject.toml", "setup.py", "src/_navrl_gymnasium.pth"):   # with the set-up's inputs
        (tmp_path / f).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / f, tmp_path / f)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "id").write_text("#!/bin/sh\necho 0\n")
    (stubs / "apt-get").write_text(f"#!/bin/sh\necho \"APT-GET $*\" >> {tmp_path}/apt.log\necho APT-GET-RAN\n")
    for s in stubs.iterdir():
        s.chmod(0o755)
    r = subprocess.run([make, "setup", "PYTHON=no-such-python"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PATH": str(stubs)}, timeout=60)
    out = r.stdout.splitlines()
    assert r.returncode != 0 and "APT-GET-RAN" in out, r.stdout + r.stderr
    said = [x for x in out if "apt-get install chromium chromium-driver" in x]
    assert said and out.index(said[0]) < out.index("APT-GET-RAN"), out
    assert "as root" in said[0]


# ---------------------------------------------------------------- web-app suites without a scripted solution
WEB_APP = """name: myapp
tasks:
  - id: press-go
    goal: Press Go.
    start_url: {url}
    success: "return false;"
    max_steps: 2
"""


@pytest.mark.parametrize("cmd", [["eval", "-n", "2"], ["play"]])
def test_a_web_app_without_agent_says_what_to_use(cmd, tmp_path):
    suite = tmp_path / "app.yaml"
    suite.write_text(WEB_APP.format(url="http://127.0.0.1:9/index.html"))
    r = navrl(*cmd, "--suite", f"web:{suite}", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and not (tmp_path / "o").exists(), r.stderr
    assert r.stderr == (f"navrl: error: --agent expert (the default) has no scripted solution for 'press-go' of "
                        f"--suite web:{suite}; use --agent random, --agent api (an OpenAI-compatible model) or "
                        "--policy CHECKPOINT (a trained planner)\n")
    web = (ROOT / "docs" / "web.md").read_text()
    assert "cannot play them" in web and "--agent random" in web


def test_play_on_a_page_that_never_loads_is_one_line_and_exit_3(tmp_path):
    from navrl.device.browser import browser_ready
    why = browser_ready()
    if why:
        pytest.skip(why)
    suite = tmp_path / "dead.yaml"
    suite.write_text(WEB_APP.format(url="http://127.0.0.1:9/index.html"))   # Chromium refuses port 9
    r = navrl("play", "--suite", f"web:{suite}", "--agent", "random", "--out", str(tmp_path / "o"))
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("navrl: error: myapp:press-go:iphone:0: the device failed before the episode could "
                               "start (app_never_loads"), r.stderr
    assert not (tmp_path / "o").exists()


def test_readme_first_hour_has_five_timed_commands_that_exist():
    """The README's "first hour": set-up, SFT, RL, watch (play --policy), report, each timed."""
    readme = (ROOT / "README.md").read_text()
    part = readme.split("### The first hour", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    cmds = [x.split("#")[0].strip() for x in part.splitlines() if x and not x.startswith(" ")]
    assert [c.split()[0:2] for c in cmds] == [["make", "setup"], ["navrl", "sft"], ["navrl", "train"],
                                              ["navrl", "play"], ["navrl", "report"]], cmds
    assert "--policy runs/ppo" in cmds[3] and cmds[4] == "navrl report runs/ppo"
    assert len(re.findall(r"# [\d.]+ (s|min)\b", part)) == 5 and "load" in part
    import shlex

    from navrl.cli.main import build_parser
    parser = build_parser()
    for c in cmds[1:]:   # each is a valid navrl command line as written
        args = parser.parse_args(shlex.split(c)[1:])
        assert args.cmd == c.split()[1]
