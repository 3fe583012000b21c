"""TrainConfig defaults, validation and derived values (navrl.rl.config)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from navrl.cli.main import main
from navrl.rl.config import _PATHS, SECTIONS, ConfigError, TrainConfig, migrate_saved
from navrl.rl.estimators import AdvantageEstimator
from navrl.rl.presets import get_preset


def test_design_defaults():
    c = TrainConfig().validate()
    assert (c.rollout.tasks_per_update, c.rollout.rollouts_per_task, c.rollout.max_steps) == (16, 8, 30)
    assert c.trajectories_per_update == 128
    assert (c.advantage.gamma, c.advantage.lam, c.policy.clip_eps) == (0.5, 1.0, 0.2)
    assert (c.critic.critic_warmup_updates, c.critic.critic_lr_ratio) == (15, 100.0)
    assert c.advantage.estimator is AdvantageEstimator.PPO
    assert c.critic_lr == pytest.approx(c.policy.policy_lr * 100.0)


def test_policy_frozen_during_warmup_only_for_critic_estimators():
    c = TrainConfig()
    assert [c.policy_frozen(u) for u in (0, 14, 15, 100)] == [True, True, False, False]
    assert not TrainConfig().override({"critic.critic_warmup_updates": 0}).policy_frozen(0)
    for name in ("grpo", "gigpo"):
        assert not TrainConfig().override({"advantage.estimator": name}).policy_frozen(0)  # no critic to warm up
    for name in ("ppo_terminal_only", "gigppo"):
        assert TrainConfig().override({"advantage.estimator": name}).policy_frozen(0)
    with pytest.raises(ConfigError):
        c.policy_frozen(-1)


def test_critic_lr_follows_ratio():
    cfg = TrainConfig().override({"policy.policy_lr": 2e-6, "critic.critic_lr_ratio": 50.0})
    assert cfg.critic_lr == pytest.approx(1e-4)


@pytest.mark.parametrize(
    "changes",
    [
        {"advantage.gamma": -0.1},
        {"advantage.gamma": 1.01},
        {"advantage.gamma": float("nan")},
        {"advantage.lam": 0.95},
        {"rollout.tasks_per_update": 0},
        {"rollout.rollouts_per_task": -1},
        {"rollout.max_steps": 0},
        {"run.num_updates": -3},
        {"critic.critic_warmup_updates": -1},
        {"policy.ppo_epochs": 0},
        {"policy.minibatch_size": 2.5},
        {"rollout.tasks_per_update": True},
        {"policy.policy_lr": 0.0},
        {"critic.critic_lr_ratio": -1.0},
        {"policy.clip_eps": 0.0},
        {"policy.clip_eps": 1.5},
        {"policy.kl_coef": -0.1},
        {"policy.entropy_coef": float("inf")},
        {"critic.value_clip": 0.0},
        {"policy.grad_clip": -1.0},
        {"advantage.estimator": "reinforce++"},
        {"advantage.estimator": "grpo", "rollout.rollouts_per_task": 1},
        {"advantage.whiten_advantages": "yes"},
    ],
)
def test_invalid_values_raise_config_error(changes):
    with pytest.raises(ConfigError):
        TrainConfig().override(changes).validate()
    assert issubclass(ConfigError, ValueError)


def test_messages_name_fields_by_section():
    with pytest.raises(ConfigError, match=r"^policy\.clip_eps must be < 1, got 1\.5$"):
        TrainConfig().override({"policy.clip_eps": 1.5}).validate()
    with pytest.raises(ConfigError, match=r"^rollout\.max_steps: input should be a valid integer"):
        TrainConfig().override({"rollout.max_steps": "3"}).validate()


def test_string_estimator_is_coerced_and_dict_round_trip():
    c = TrainConfig().override({"advantage.estimator": "gigppo", "critic.value_clip": 0.5, "policy.grad_clip": None})
    assert c.advantage.estimator is AdvantageEstimator.GIGPPO
    d = c.to_dict()
    assert list(d) == list(SECTIONS) and d["advantage"]["estimator"] == "gigppo"
    assert TrainConfig.from_dict(d) == c
    assert TrainConfig.from_dict(json.loads(json.dumps(d))) == c          # JSON: tuples come back as lists
    assert TrainConfig.from_dict({"advantage.estimator": "gigppo", "critic": {"value_clip": 0.5},
                                  "policy.grad_clip": None}) == c         # dotted names and sections mix
    with pytest.raises(ConfigError, match="unknown"):
        TrainConfig.from_dict({"advantage": {"gama": 0.5}})


def test_override_copies_and_leaves_the_original_alone():
    c = TrainConfig()
    d = c.override({"policy.clip_eps": 0.28, "run.eval_suites": ["test-ios"]})
    assert (d.policy.clip_eps, d.run.eval_suites, c.policy.clip_eps) == (0.28, ("test-ios",), 0.2)
    assert all(getattr(d, s) is not getattr(c, s) for s in SECTIONS)      # no section shared
    assert d.get("policy.clip_eps") == 0.28 and d.override({}) == d


# ------------------------------------------------------------------ flat names: refused from users
@pytest.mark.parametrize("flat", sorted(_PATHS))
def test_every_flat_name_is_refused_with_its_new_name(flat):
    new = _PATHS[flat]
    for bad in (lambda: TrainConfig().override({flat: 1}), lambda: TrainConfig.from_dict({flat: 1}),
                lambda: TrainConfig.check_name(flat), lambda: get_preset("quick", {flat: 1})):
        with pytest.raises(ConfigError) as e:
            bad()
        assert f"'{flat}' is now '{new}'" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(AttributeError, match=rf"TrainConfig.{flat} is now TrainConfig.{new}"):
        getattr(TrainConfig(), flat)


def test_wrong_sections_and_unknown_names_are_refused():
    with pytest.raises(ConfigError, match="'policy.gamma': 'gamma' is 'advantage.gamma'"):
        TrainConfig.check_name("policy.gamma")
    with pytest.raises(ConfigError, match="is a TrainConfig section"):
        TrainConfig.check_name("policy")
    with pytest.raises(ConfigError, match="unknown TrainConfig field 'nosuch'"):
        TrainConfig.check_name("nosuch")


@pytest.mark.parametrize("argv, says", [
    (["--set", "clip_eps=0.28"], "'clip_eps' is now 'policy.clip_eps'"),
    (["--set", "policy.gamma=0.9"], "'gamma' is 'advantage.gamma'"),
    (["--set", "nosuch=1"], "'nosuch': not a TrainConfig field"),
])
def test_the_cli_refuses_a_flat_set_name_in_one_line_exit_2(argv, says, capsys):
    assert main(["train", "--preset", "quick", *argv]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and says in err[0], err


def test_set_overrides_take_dotted_names():
    from navrl.cli.cmd_train import parse_overrides
    over = parse_overrides(["policy.clip_eps=0.28", "run.eval_suites=[\"test-ios\"]", "advantage.estimator=grpo"])
    assert over == {"policy.clip_eps": 0.28, "run.eval_suites": ["test-ios"], "advantage.estimator": "grpo"}
    cfg = get_preset("demo", over).train
    assert (cfg.policy.clip_eps, cfg.run.eval_suites, str(cfg.advantage.estimator)) == (0.28, ("test-ios",), "grpo")


# ------------------------------------------------------------------ saved files: migrated
def test_a_flat_config_saved_by_an_earlier_version_loads():
    """A checkpoint's config as navrl wrote it before the sections (every field flat)."""
    flat = {"tasks_per_update": 16, "rollouts_per_task": 8, "max_steps": 20, "num_updates": 30, "gamma": 0.5,
            "lam": 1.0, "estimator": "gigpo", "whiten_advantages": True, "gigpo_step_weight": 1.0,
            "critic_warmup_updates": 0, "critic_lr_ratio": 10.0, "critic_steps": 32, "value_clip": None,
            "gigppo_hidden_dim": 256, "policy_lr": 0.0005, "clip_eps": 0.2, "ppo_epochs": 2, "minibatch_size": 256,
            "kl_coef": 0.0, "entropy_coef": 0.0, "sft_coef": 1.0, "sft_batch_size": 64, "sft_augment": 0.5,
            "grad_clip": 1.0, "weight_decay": 0.0, "seed": 0, "reward_preset": "default", "rollout_temperature": 0.7,
            "explore": 0.0, "train_perturb": True, "eval_every": 0, "eval_episodes": 192,
            "eval_suites": ["test-ios", "test-android", "test-unseen"], "checkpoint_every": 6, "torch_threads": 2,
            "task_pool": 96, "self_imitation": 0.0, "self_imitation_buffer": 4096, "pool_replay": 0.0,
            "rollout_deadline_s": None, "max_masked_updates": 3, "guided_start": 0.0}
    assert set(flat) == set(_PATHS) - {"loss_terms", "diagnostics_samples", "handover_k", "curriculum_threshold",
                                       "curriculum_window", "explore_arg", "dynamic_sampling",
                                       "curriculum_step", "curriculum_shared", "handover_share", "explore_arg_by_source", "explore_prior",
                                       "multi_app_share", "curriculum_practice", "unanimous_fail_penalty", "frontier_share",
                                       "curriculum_probe", "self_imitation_select", "entropy_control",
                                           "entropy_target_kind", "entropy_target_node", "entropy_target_text",
                                           "entropy_control_rate", "off_policy_ratio", "is_weight_cap", "overlap",
                                           "learnability_sampling", "learnability_floor", "learnability_decay",
                                           "learnability_unsolved_visits", "hindsight"}   # (these came later: defaults)
    # (a config saved before policy.off_policy_ratio ran against the behaviour policy: it resumes so)
    assert TrainConfig.from_saved(flat) == get_preset("demo").train.override({"policy.off_policy_ratio": "behaviour"})
    assert TrainConfig.from_saved(get_preset("demo").train.to_dict()) == get_preset("demo").train
    assert migrate_saved(flat)["policy.clip_eps"] == 0.2
    with pytest.raises(ConfigError, match="'tasks_per_update' is now 'rollout.tasks_per_update'"):
        TrainConfig.from_dict(flat)                          # the same dict from a user: refused
    assert TrainConfig.from_saved(get_preset("demo").train.to_dict()) == get_preset("demo").train


def test_committed_results_configs_migrate():
    """The committed runs' results.json record their TrainConfig overrides, with flat names (runs
    before the config had sections) or by section (since): either loads to the same settings."""
    root = Path(__file__).resolve().parents[2] / "docs" / "results"
    found = 0
    for p in sorted(root.rglob("results.json")):
        train = json.loads(p.read_text()).get("config", {}).get("train")
        if train:
            found += 1
            cfg = get_preset("demo").train.override(migrate_saved(train)).validate()
            recorded = train.get("tasks_per_update", train.get("rollout", {}).get("tasks_per_update"))
            assert recorded is not None and cfg.rollout.tasks_per_update == recorded, p
    assert found >= 1


def test_every_field_has_a_docstring():
    docs = TrainConfig.field_docs()
    names = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]
    assert list(docs) == names and len(names) == len(_PATHS)
    assert all(len(docs[n]) > 10 for n in names)
    assert "docs/design.md §5e: 16" in docs["rollout.tasks_per_update"]
    assert [f.name for f in dataclasses.fields(TrainConfig)] == list(SECTIONS)


def test_config_import_pulls_no_torch():
    # every CLI command imports ConfigError, so the module stays light; validate() reads the
    # estimator registry, which lives with the estimator functions (torch), as training does
    code = ("import sys, navrl.rl.config as c; d = c.TrainConfig().override({'advantage.estimator': 'grpo'}); "
            "d.to_dict(); c.TrainConfig.field_docs(); c.TrainConfig.check_name('policy.clip_eps'); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
