"""One registry for estimators (navrl.rl.advantages): a new estimator is one decorated function;
the config, the trainer and ``navrl train --estimator NAME --plugin FILE`` all read its spec."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest
import torch

from navrl.cli.main import main
from navrl.rl.advantages import (
    AdvantageInputs,
    AdvantageOutputs,
    DuplicateEstimatorError,
    UnknownEstimatorError,
    estimator_spec,
    register_estimator,
    registered_estimators,
    unregister_estimator,
)
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.estimators import AdvantageEstimator

torch.set_num_threads(1)

NAME = "test_registry_constant"
PUSH = 0.5   # the plugin's advantage on every valid step

# A user's estimator module: one decorated function, nothing else. It logs each call to MARKER.
PLUGIN = '''
import json
import torch
from navrl.rl.advantages import AdvantageInputs, AdvantageOutputs, discounted_returns, register_estimator


@register_estimator({name!r}, critic=None, min_rollouts_per_task=2)
@torch.no_grad()
def constant_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """A constant advantage on every valid step: push up whatever was sampled."""
    G = discounted_returns(inputs.step_rewards, inputs.terminal_rewards, inputs.mask, inputs.gamma)
    with open({marker!r}, "a") as f:
        f.write(json.dumps({{"shape": list(G.shape), "values": inputs.values is not None}}) + "\\n")
    return AdvantageOutputs(advantages=torch.where(inputs.mask, {push!r}, 0.0).to(G.dtype), returns=G)
'''


@pytest.fixture(autouse=True)
def registry_unchanged():
    """Every test leaves the registry (and sys.modules) as it found them."""
    names, modules = set(registered_estimators()), set(sys.modules)
    yield
    for name in set(registered_estimators()) - names:
        unregister_estimator(name)
    for mod in set(sys.modules) - modules:
        if mod.startswith("navrl_plugin_"):
            del sys.modules[mod]
    assert set(registered_estimators()) == names


def _zero(inputs: AdvantageInputs) -> AdvantageOutputs:
    """Zero advantages and returns."""
    z = torch.zeros_like(inputs.step_rewards)
    return AdvantageOutputs(z, z)


@pytest.fixture(scope="module")
def init_policy(tmp_path_factory):
    """An untrained quick planner saved as an SFT policy (enough for the plumbing)."""
    from navrl.experiments.pipeline import build_tiny_policy, save_policy
    from navrl.rl.presets import get_preset
    return save_policy(build_tiny_policy(get_preset("quick")), tmp_path_factory.mktemp("init") / "sft.pt")


def test_builtins_carry_their_specs_in_the_registry():
    ppo, gigppo, grpo, gigpo = (estimator_spec(n) for n in ("ppo", "gigppo", "grpo", "gigpo"))
    assert (ppo.critic, ppo.needs_state_hashes, ppo.min_rollouts_per_task) == ("value", False, 1)
    assert (gigppo.critic, gigppo.needs_state_hashes) == ("gigppo", True)
    assert (grpo.critic, grpo.needs_state_hashes, grpo.min_rollouts_per_task) == (None, False, 2)
    assert (gigpo.critic, gigpo.needs_state_hashes, gigpo.min_rollouts_per_task) == (None, True, 2)
    assert estimator_spec(AdvantageEstimator.PPO) is ppo and ppo.doc.startswith("PPO")
    assert {e.value for e in AdvantageEstimator} <= set(registered_estimators())


def test_a_decorated_function_trains_one_update_by_name_from_the_cli(init_policy, tmp_path, capsys):
    marker = tmp_path / "calls.jsonl"
    plugin = tmp_path / "my_estimators.py"
    plugin.write_text(textwrap.dedent(PLUGIN.format(name=NAME, marker=str(marker), push=PUSH)))
    assert NAME not in registered_estimators()
    run = tmp_path / "run"
    rc = main(["train", "--preset", "quick", "--init", str(init_policy), "--out", str(run), "--updates", "1",
               "--plugin", str(plugin), "--estimator", NAME, "--set", "run.eval_suites=[\"test-ios\"]",
               "--set", "policy.minibatch_size=100000"])   # one minibatch: every PPO ratio is exactly 1
    assert rc == 0, capsys.readouterr().err
    # the decorator alone registered it, with the docstring and the declared needs
    assert NAME in registered_estimators()
    spec = estimator_spec(NAME)
    assert (spec.critic, spec.needs_state_hashes, spec.min_rollouts_per_task) == (None, False, 2)
    assert spec.doc.startswith("A constant advantage")
    assert TrainConfig().override({"advantage.estimator": NAME}).validate().advantage.estimator == NAME
    # the trainer called it once, without critic values (critic-free), on 2 tasks x 2 rollouts
    calls = [json.loads(x) for x in marker.read_text().splitlines()]
    assert len(calls) == 1 and calls[0]["shape"][0] == 4 and calls[0]["values"] is False
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    ups = [r for r in recs if r["kind"] == "update"]
    assert [r["update"] for r in ups] == [1]
    m = ups[0]
    # its advantages were the ones used: no warm-up, no critic, and with ratio 1 the clipped
    # surrogate is -A on every token (built-ins give group-relative or whitened advantages)
    assert m["policy_frozen"] is False and m["samples"] > 0 and m["policy/num_tokens"] > 0
    assert not any(k.startswith("critic/") for k in m)
    assert m["policy/pg_loss"] == pytest.approx(-PUSH, abs=1e-5)
    # the run's config records the name; resuming needs the plugin again, which is loaded once
    from navrl.rl.trainer import load_checkpoint_file
    assert load_checkpoint_file(run)["config"]["advantage"]["estimator"] == NAME
    rc = main(["train", "--preset", "quick", "--resume", "--out", str(run), "--updates", "1",
               "--plugin", str(plugin), "--set", "run.eval_suites=[\"test-ios\"]"])
    assert rc == 0 and len(marker.read_text().splitlines()) == 1   # nothing left to train


def test_an_unregistered_name_or_a_bad_plugin_is_one_line_and_exit_2(init_policy, tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text("import navrl_no_such_module\n")
    dup = tmp_path / "dup.py"
    dup.write_text("from navrl.rl.advantages import register_estimator\n\n"
                   "@register_estimator('grpo')\ndef mine(inputs):\n    return None\n")
    base = ["train", "--preset", "quick", "--init", str(init_policy), "--out", str(tmp_path / "run")]
    for extra, words in ((["--estimator", NAME], "unknown estimator"),
                         (["--plugin", str(tmp_path / "missing.py")], "no such file"),
                         (["--plugin", "navrl_no_such_module"], "ModuleNotFoundError"),
                         (["--plugin", str(bad)], "ModuleNotFoundError"),
                         (["--plugin", str(dup)], "already registered")):
        rc = main(base + extra)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert rc == 2 and len(err) == 1 and err[0].startswith("navrl: error:") and words in err[0], (extra, err)
    assert not (tmp_path / "run").exists()   # refused before any work: no (empty) folder left behind


def test_registering_a_name_twice_raises():
    register_estimator(NAME)(_zero)
    with pytest.raises(DuplicateEstimatorError, match=NAME):
        register_estimator(NAME, critic="value")(_zero)
    with pytest.raises(DuplicateEstimatorError):
        register_estimator(AdvantageEstimator.GIGPO)(_zero)
    assert estimator_spec(NAME).critic is None          # the first registration stands


def test_min_rollouts_per_task_is_enforced_by_the_config():
    register_estimator(NAME, min_rollouts_per_task=3)(_zero)
    with pytest.raises(ConfigError, match=rf"estimator {NAME} .*rollouts_per_task must be >= 3.*got 2"):
        TrainConfig().override({"advantage.estimator": NAME, "rollout.rollouts_per_task": 2}).validate()
    TrainConfig().override({"advantage.estimator": NAME, "rollout.rollouts_per_task": 3}).validate()
    with pytest.raises(ConfigError, match="rollouts_per_task must be >= 2"):
        TrainConfig().override({"advantage.estimator": "grpo", "rollout.rollouts_per_task": 1}).validate()


def test_the_trainer_reads_the_critic_kind_and_hashes_from_the_spec(tmp_path):
    from navrl.experiments.pipeline import build_tiny_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    quick = get_preset("quick")
    register_estimator(NAME)(_zero)
    cfg = TrainConfig().override({"advantage.estimator": NAME})
    assert cfg.uses_critic is False and cfg.policy_frozen(0) is False
    unregister_estimator(NAME)
    register_estimator(NAME, critic="gigppo", needs_state_hashes=True)(_zero)
    cfg = TrainConfig().override({"advantage.estimator": NAME})
    assert cfg.uses_critic and cfg.policy_frozen(0)
    cfg = TrainConfig.from_dict({**quick.train.to_dict(), "advantage.estimator": NAME})
    tr = Trainer(build_tiny_policy(quick), cfg, tmp_path, log=False)
    assert tr.critic.kind == "gigppo" and tr.runner.cfg.phash is True
    tr = Trainer(build_tiny_policy(quick), quick.train, tmp_path / "ppo", log=False)   # ppo: value critic
    assert tr.critic.kind == "value" and tr.runner.cfg.phash is False


def test_bad_specs_are_refused_at_decoration_time():
    for kwargs, words in (({"critic": "q"}, "critic must be one of"),
                          ({"critic": "gigppo"}, "needs_state_hashes=True"),
                          ({"min_rollouts_per_task": 0}, "min_rollouts_per_task"),
                          ({"min_rollouts_per_task": True}, "min_rollouts_per_task")):
        with pytest.raises(ValueError, match=words):
            register_estimator(NAME, **kwargs)(_zero)
    with pytest.raises(ValueError, match="without spaces"):
        register_estimator("two words")(_zero)
    assert NAME not in registered_estimators()
    with pytest.raises(UnknownEstimatorError):
        unregister_estimator(NAME)
    with pytest.raises(ConfigError, match="unknown estimator"):
        TrainConfig().override({"advantage.estimator": NAME}).validate()


def test_the_docs_table_and_example_match_the_registry():
    """docs/estimators.md: its table says what the built-in specs say; its example registers."""
    from pathlib import Path

    from navrl.rl.advantages import compute_advantages
    doc = (Path(__file__).resolve().parents[2] / "docs" / "estimators.md").read_text()
    rows = [[c.strip().strip("`") for c in ln.strip("|").split("|")] for ln in doc.splitlines()
            if ln.startswith("| `")]
    assert {r[0] for r in rows} == {e.value for e in AdvantageEstimator}
    for name, critic, hashes, min_rollouts, _ in rows:
        spec = estimator_spec(name)
        assert (spec.critic or "none", spec.needs_state_hashes, spec.min_rollouts_per_task) == \
            (critic, hashes == "yes", int(min_rollouts)), name
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/estimators.md", "exec"), {})
    spec = estimator_spec("reinforce_mean")
    assert spec.critic is None and spec.doc.startswith("REINFORCE")
    mask = torch.tensor([[True, True], [True, False]])
    out = compute_advantages("reinforce_mean", AdvantageInputs(
        step_rewards=torch.tensor([[1.0, 0.0], [0.0, 0.0]]), terminal_rewards=torch.tensor([1.0, 0.0]),
        step_mask=mask, valid=torch.tensor([True, True]), group_ids=torch.tensor([0, 0]), gamma=0.5))
    assert torch.allclose(out.returns, torch.tensor([[2.0, 1.0], [0.0, 0.0]]))
    assert torch.allclose(out.advantages, torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
