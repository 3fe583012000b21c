"""Named run presets: one place for the sizes of SFT, the tiny planner and online RL.

``demo`` (the pointer planner; what ``navrl sft``, ``train`` and ``demo`` run without
``--preset``) is sized to finish SFT + RL on a 2-core CPU within ``make demo``'s 15 minutes;
``demo-text`` is the same job with the tiny text planner; ``quick`` / ``quick-pointer`` check
the plumbing in seconds (tests); ``design`` keeps docs/design.md §5e's values (``TrainConfig()``:
16 tasks x 8 rollouts, 30 steps, 336 updates, 15 warm-up updates, critic LR x100), sized for
real models and machines. ``default`` is its old name, still accepted (:data:`ALIASES`): it
was never the default. ``navrl train --list-presets`` prints :func:`describe_presets`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from navrl.agent.policy.pointer.config import PointerConfig
from navrl.agent.policy.tiny_config import TinyConfig
from navrl.rl.config import (AdvantageConfig, ConfigError, CriticConfig, DataConfig, ExplorationConfig, PolicyConfig,
                             RolloutConfig, RunConfig, TrainConfig)
from navrl.rl.sft_config import SFTConfig


@dataclass(frozen=True)
class Preset:
    name: str
    sft: SFTConfig
    tiny: TinyConfig
    train: TrainConfig
    tokenizer_tasks: int = 200
    description: str = ""
    planner: str = "tiny"
    """Which CPU planner the preset trains: "pointer" (docs/design.md §3a) or "tiny" (the text LM)."""
    pointer: PointerConfig = field(default_factory=PointerConfig)
    """Sizes of the pointer planner (used when planner == "pointer")."""


def _quick_train() -> TrainConfig:
    """The quick presets' RL: 2 tasks x 2 rollouts of at most 4 steps, 2 updates."""
    return TrainConfig(rollout=RolloutConfig(tasks_per_update=2, rollouts_per_task=2, max_steps=4),
                       policy=PolicyConfig(policy_lr=1e-3, minibatch_size=16),
                       critic=CriticConfig(critic_warmup_updates=1, critic_lr_ratio=10.0, critic_steps=2),
                       run=RunConfig(num_updates=2, eval_every=0, eval_episodes=4, checkpoint_every=1))


def _presets() -> dict[str, Preset]:
    return {
        "design": Preset("design", SFTConfig(), TinyConfig(), TrainConfig(),
                         description="docs/design.md §5e's sizes (TrainConfig()) with the tiny text planner: for real "
                                     "models and machines, hours on a CPU; not the default (demo is)"),
        "demo": Preset(
            "demo",
            # Sized from measurements on the 2-core machine (docs/results/pointer_planner.md):
            # SFT on 600 clean single-app demonstrations x 10 epochs (~70 s); 30 GiGPO updates
            # of 16 tasks x 8 rollouts at T 0.7, lr 5e-4, cycling a pool of 96 train tasks,
            # with PPO-ptx (sft_coef 1: the demonstrations keep the planner from unlearning
            # what they showed). Chosen on a validation set (train templates, new seeds, both
            # skins): pool 96 vs 48 and 18 / 30 / 45 / 90 updates, kind exploration 0.1 and
            # prioritised pool replay differ by less than the noise (val-ios 68.2% -> 79-80%).
            # Half of the demonstration steps are shown with distractor nodes and other screen
            # geometry (SFT and the PPO-ptx term): validation on Android screens 21.9% -> 42.7%
            # after SFT at the same iOS score.
            SFTConfig(n_tasks=600, epochs=10, lr=3e-3, batch_size=32, augment=0.5),
            TinyConfig(),
            TrainConfig(rollout=RolloutConfig(tasks_per_update=16, rollouts_per_task=8, max_steps=20),
                        advantage=AdvantageConfig(estimator="gigpo"),
                        policy=PolicyConfig(policy_lr=5e-4, minibatch_size=256, ppo_epochs=2, sft_coef=1.0,
                                            sft_batch_size=64, sft_augment=0.5),
                        critic=CriticConfig(critic_warmup_updates=0, critic_lr_ratio=10.0, critic_steps=32),
                        exploration=ExplorationConfig(rollout_temperature=0.7),
                        data=DataConfig(task_pool=96),
                        run=RunConfig(num_updates=30, eval_every=0, eval_episodes=192, checkpoint_every=6,
                                      torch_threads=2)),
            planner="pointer", pointer=PointerConfig(),
            description="the pointer planner, what make demo runs: SFT + online RL on a 2-core CPU in 2-10 minutes"),
        "demo-text": Preset(
            "demo-text",
            # Sized from measurements on the 2-core machine (docs/results/demo_tuning.md): SFT
            # ~4-5 min on both cores, 10 RL updates ~5 min, 4 evaluations of 192 episodes ~3.5
            # min (14 updates and 7 SFT epochs took 15.4 min on 2026-12-03). Rollout temperature
            # 0.6 (at 1.0 the SFT planner's samples are mostly wrong steps); 64 critic steps per
            # update (8 left the critic at explained variance ~0.1); lr 1e-4 (3e-4 and 6e-4
            # drifted further). Measured: no setting tried beats SFT on test-ios by more than a
            # point (docs/results/demo_tuning.md).
            SFTConfig(n_tasks=800, epochs=6, lr=4e-3, batch_size=16),
            TinyConfig(d_model=96, n_layers=2, n_heads=4, d_ff=288),
            TrainConfig(rollout=RolloutConfig(tasks_per_update=8, rollouts_per_task=8, max_steps=20),
                        policy=PolicyConfig(policy_lr=1e-4, minibatch_size=64, ppo_epochs=1),
                        critic=CriticConfig(critic_warmup_updates=3, critic_lr_ratio=10.0, critic_steps=64),
                        exploration=ExplorationConfig(rollout_temperature=0.6),
                        run=RunConfig(num_updates=10, eval_every=0, eval_episodes=192, checkpoint_every=4,
                                      torch_threads=2)),
            description="the tiny text planner (the earlier demo): SFT + online PPO on a 2-core CPU in about 15 minutes"),
        "quick": Preset(
            "quick",
            SFTConfig(n_tasks=12, epochs=6, batch_size=16, lr=5e-3),
            TinyConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_new_tokens=24),
            _quick_train(),
            tokenizer_tasks=12, description="the tiny text planner at toy sizes: every stage in seconds (plumbing, not results)"),
        "quick-pointer": Preset(
            "quick-pointer",
            SFTConfig(n_tasks=12, epochs=4, batch_size=16, lr=5e-3),
            TinyConfig(),
            _quick_train(),
            planner="pointer", pointer=PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64),
            description="the pointer planner at toy sizes: every stage in seconds (checks the plumbing, not the results)"),
    }


_ORDER = ("demo", "demo-text", "quick-pointer", "quick", "design")
PRESETS = tuple(sorted(_presets(), key=lambda n: _ORDER.index(n) if n in _ORDER else len(_ORDER)))
"""The presets' names, the default first."""
DEFAULT_PRESET = "demo"
"""What ``navrl sft``, ``navrl train`` and ``navrl demo`` run without ``--preset``."""
ALIASES = {"default": "design"}
"""Old preset names, still accepted: ``default`` named docs/design.md §5e's sizes, never the CLI's default."""


def preset_rows() -> list[dict[str, str]]:
    """One row per preset (the default first): what it trains, how big, what it is for."""
    ps = _presets()
    rows = []
    for name in PRESETS:
        p = ps[name]
        t = p.train
        rows.append({
            "preset": name + (" (default)" if name == DEFAULT_PRESET else "")
                      + "".join(f", alias {a}" for a, b in ALIASES.items() if b == name),
            "planner": p.planner,
            "SFT": f"{p.sft.n_tasks} tasks x {p.sft.epochs} epochs",
            "RL": f"{t.advantage.estimator}, {t.run.num_updates} updates x {t.rollout.tasks_per_update} tasks x "
                  f"{t.rollout.rollouts_per_task} rollouts, <= {t.rollout.max_steps} steps"
                  + (f", PPO-ptx {t.policy.sft_coef:g}" if t.policy.sft_coef else ""),
            "final evaluation": f"{t.run.eval_episodes} episodes x {len(t.run.eval_suites)} suites",
            "what it is": p.description,
        })
    return rows


def describe_presets() -> str:
    """The presets as plain text (``navrl train --list-presets``)."""
    lines = []
    for r in preset_rows():
        lines.append(f"{r['preset']}: {r['what it is']}")
        lines.append(f"    planner {r['planner']}; SFT {r['SFT']}; RL {r['RL']}; final evaluation {r['final evaluation']}")
    return "\n".join(lines)


def presets_markdown() -> str:
    """The presets as a Markdown table (README.md's, checked by a test)."""
    rows = preset_rows()
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(r[c].replace("|", "/") for c in cols) + " |" for r in rows]
    return "\n".join(out)


def get_preset(name: str, overrides: Mapping[str, Any] | None = None) -> Preset:
    """The preset ``name``, its TrainConfig with ``overrides`` (dotted name -> value, as
    ``--set``: ``{"run.seed": 1, "policy.clip_eps": 0.28}``) applied, validated.

    Raises:
        ConfigError: an unknown preset, an unknown or flat field name (the message names the
            new one), or an invalid value.
    """
    ps = _presets()
    name = ALIASES.get(name, name)
    if name not in ps:
        raise ConfigError(f"unknown preset {name!r}; choose from {', '.join(ps)} (navrl train --list-presets "
                          "says what each is)")
    p = ps[name]
    if overrides:
        p = replace(p, train=p.train.override(overrides))
    p.train.validate()
    p.sft.validate()
    return p
