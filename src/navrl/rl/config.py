"""Training configuration: every RL default of docs/design.md §5e in one dataclass.

Importing this module pulls in no torch (the CLI imports :class:`ConfigError` for every
command); validating reads the estimator registry, which does. Each field carries its own
docstring (the string literal right under it), readable at runtime through
:meth:`TrainConfig.field_docs`.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from dataclasses import asdict, dataclass, fields
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from navrl.rl.estimators import AdvantageEstimator

if TYPE_CHECKING:
    from navrl.rl.advantages import EstimatorSpec
    from navrl.rl.losses import LossSpec

__all__ = ["ConfigError", "TrainConfig"]


class ConfigError(ValueError):
    """A configuration value is invalid (out of range, wrong kind, unsupported)."""


@dataclass
class TrainConfig:
    """Online RL of the planner: rollout sizes, returns, advantages, PPO and critic settings."""

    # --- rollouts -------------------------------------------------------------------------
    tasks_per_update: int = 16
    """Distinct task instances sampled per update (docs/design.md §5e: 16)."""

    rollouts_per_task: int = 8
    """Sibling rollouts per task; they form one group for GRPO/GiGPO/GiGPPO (docs/design.md §5e: 8)."""

    max_steps: int = 30
    """Step budget of an episode; running out earns the 'budget exhausted' terminal reward."""

    num_updates: int = 336
    """Policy updates in a run (the paper's two epochs over its task set took 336)."""

    # --- returns and advantages -------------------------------------------------------------
    gamma: float = 0.5
    """Discount of the dense step rewards; the terminal reward is never discounted."""

    lam: float = 1.0
    """GAE lambda. Only 1 is supported: A = G - V (lambda != 1 needs a two-head critic)."""

    estimator: AdvantageEstimator | str = AdvantageEstimator.PPO
    """Advantage estimator by registered name: ppo, ppo_terminal_only, gigppo, grpo, gigpo or one
    registered with navrl.rl.advantages.register_estimator (its spec says critic, hashes, group size)."""

    whiten_advantages: bool = True
    """Whiten G - V over the valid steps of the batch (ppo family; docs/design.md §5e: on)."""

    gigpo_step_weight: float = 1.0
    """w in the GiGPO baseline's A = A_episode + w * A_step."""

    # --- critic -----------------------------------------------------------------------------
    critic_warmup_updates: int = 15
    """Updates at the start during which only the critic learns and the policy is frozen."""

    critic_lr_ratio: float = 100.0
    """Critic learning rate / policy learning rate (docs/design.md §5e: 100)."""

    critic_steps: int = 8
    """Critic gradient steps per update (full batch of valid steps); it chases a moving target."""

    value_clip: float | None = None
    """PPO2-style value clip range for the critic loss; None for a plain MSE."""

    gigppo_hidden_dim: int = 256
    """Width of the GiGPPO critic MLP."""

    # --- policy optimisation ----------------------------------------------------------------
    policy_lr: float = 1e-5
    """Learning rate of the planner (the critic uses policy_lr * critic_lr_ratio)."""

    clip_eps: float = 0.2
    """PPO ratio clip range (docs/design.md §5e: 0.2)."""

    ppo_epochs: int = 1
    """Passes over each batch of rollouts per update."""

    minibatch_size: int = 256
    """Planner outputs (steps) per optimiser step."""

    loss_terms: tuple[str, ...] = ("ppo_clip", "kl_ref", "entropy", "ptx", "self_imitation")
    """The policy loss's terms by registered name, in the order they are summed
    (``navrl.rl.losses.register_loss``: ppo_clip, kl_ref, entropy, ptx, self_imitation or one
    a plugin registers); each is weighted by the field its spec names (kl_coef, entropy_coef,
    sft_coef, self_imitation; 1 for ppo_clip) and left out while that is 0."""

    kl_coef: float = 0.0
    """Weight of the k3 KL penalty to the reference (SFT) planner; 0 disables it."""

    entropy_coef: float = 0.0
    """Weight of the entropy bonus; 0 disables it."""

    sft_coef: float = 0.0
    """Weight of a supervised term on the SFT demonstrations added to every policy minibatch
    (PPO-ptx, as in InstructGPT): RL adjusts the planner without forgetting what SFT taught.
    0 disables it; >0 needs the trainer to be given demonstrations."""

    sft_batch_size: int = 16
    """Demonstration steps drawn for the supervised term per policy minibatch."""

    sft_augment: float = 0.0
    """Share of the supervised term's demonstration steps shown in randomised form (as
    ``SFTConfig.augment``), so RL on one platform keeps what augmented SFT made robust."""

    grad_clip: float | None = 1.0
    """Max global gradient norm per optimiser step; None disables clipping."""

    weight_decay: float = 0.0
    """AdamW weight decay of the policy parameters."""

    seed: int = 0
    """Seed of task sampling, rollouts and initialisation."""

    # --- run ----------------------------------------------------------------------------------
    reward_preset: str = "default"
    """Reward table: "default" (docs/design.md §4b) or "cautionary" (the paper's prolonging GRPO reward)."""

    rollout_temperature: float = 1.0
    """Sampling temperature of training rollouts (evaluation decodes greedily). The policy PPO
    trains is the tempered one: rollouts record log softmax(logits / T) and the update scores at T."""

    explore: float = 0.0
    """Exploration of the step kind (pointer planner): while sampling rollouts this share of
    the kind's probability is spread uniformly over the legal kinds, so kinds the
    demonstrations never showed (Go home: SFT sees single-app tasks only) are still tried.
    The recorded log-probs are of that mixture, so PPO's ratio corrects for it."""

    train_perturb: bool = True
    """Train on the world with its default perturbations (pop-ups, loading, shuffles)."""

    eval_every: int = 10
    """Evaluate on the test suites every this many updates (0: only at the end)."""

    eval_episodes: int = 64
    """Episodes per test suite and evaluation."""

    eval_suites: tuple[str, ...] = ("test-ios", "test-android", "test-unseen")
    """Suites evaluated periodically."""

    checkpoint_every: int = 5
    """Save a checkpoint every this many updates (and always on Ctrl-C and at the end)."""

    torch_threads: int = 1
    """Torch intra-op threads; 1 is fastest for the tiny planner on a shared 2-core machine."""

    task_pool: int = 0
    """0: every update draws fresh train tasks. N > 0: draw N task instances once and cycle
    through them, tasks_per_update at a time, so each task group is revisited every
    N / tasks_per_update updates (a planner that generalises across seeds learns its templates
    from repeats; measured in docs/results/pointer_planner.md)."""

    self_imitation: float = 0.0
    """Weight of a self-imitation term (Oh et al., 2018) added to every policy minibatch: the
    log-likelihood of the planner's own past outputs that earned a positive step reward and
    a positive advantage (a buffer of the last ``self_imitation_buffer``). Unlike the clipped
    PPO ratio, which lets a rare good decision grow ~1.2x per update, it pulls such decisions
    up directly. 0 disables it."""

    self_imitation_buffer: int = 4096
    """Outputs kept for the self-imitation term (first in, first out). The buffer is not
    checkpointed (prompts are large): a resumed run refills it from its next updates."""

    pool_replay: float = 0.0
    """With a task pool: 0 cycles it in order; T > 0 draws each update's tasks by prioritised
    level replay (``navrl.rl.replay``): tasks whose sibling rollouts disagreed most (mean
    |advantage|) more often, rank-based with temperature T, 30% by staleness."""

    rollout_deadline_s: float | None = None
    """Seconds one update's rollouts (leases included) may take; None waits for every episode.
    At the deadline the episodes still running are masked as ``timeout`` stragglers (never
    scored as failures; counted in the update's ``stragglers`` and ``masked_reasons``) and
    their devices go back to the farm, so a slow device cannot stall the synchronous update.
    Size it from the farm's latency: a few times the longest episode's device time."""

    max_masked_updates: int = 3
    """Stop the run (:class:`navrl.errors.Outage`, checkpoint saved) after this many updates in a
    row whose every trajectory was masked: an outage is not training. 0 never stops."""

    def __post_init__(self) -> None:
        # Configs arrive from YAML/CLI as strings; keep unknown names for validate() to report.
        if isinstance(self.estimator, str) and not isinstance(self.estimator, AdvantageEstimator):
            try:
                self.estimator = AdvantageEstimator(self.estimator)
            except ValueError:
                pass

    # --- derived values ---------------------------------------------------------------------
    @property
    def critic_lr(self) -> float:
        """Critic learning rate = policy_lr * critic_lr_ratio."""
        return self.policy_lr * self.critic_lr_ratio

    @property
    def trajectories_per_update(self) -> int:
        """Rollouts per update = tasks_per_update * rollouts_per_task (docs/design.md §5e: 128)."""
        return self.tasks_per_update * self.rollouts_per_task

    @property
    def estimator_spec(self) -> EstimatorSpec:
        """The estimator's registry entry (critic kind, screenshot hashes, minimum group size).

        Raises:
            ConfigError: no estimator is registered under that name.
        """
        # the registry lives with the estimator functions (torch): imported on first use only
        from navrl.rl.advantages import UnknownEstimatorError, estimator_spec, registered_estimators

        try:
            return estimator_spec(self.estimator)
        except UnknownEstimatorError:
            raise ConfigError(f"unknown estimator {str(self.estimator)!r}; registered: {registered_estimators()} "
                              "(register one with navrl.rl.advantages.register_estimator, "
                              "e.g. in a module given to navrl train --plugin)") from None

    @property
    def uses_critic(self) -> bool:
        """True when the estimator's spec names a critic (ppo, ppo_terminal_only, gigppo, ...)."""
        return self.estimator_spec.uses_critic

    @property
    def policy_loss(self) -> list[tuple[LossSpec, float]]:
        """The policy loss's terms in use: (registry entry, weight) for each of ``loss_terms``
        whose coefficient is not 0, in order; the weight is the coefficient (its negative for
        a bonus).

        Raises:
            ConfigError: a name no term is registered under (``UnknownLossError``).
        """
        from navrl.rl.losses import loss_spec   # the registry lives with the terms (torch)

        out = []
        for name in self.loss_terms:
            spec = loss_spec(name)
            coef = 1.0 if spec.coef is None else float(getattr(self, spec.coef))
            if coef != 0.0:
                out.append((spec, -coef if spec.maximise else coef))
        return out

    def policy_frozen(self, update_idx: int) -> bool:
        """True while the policy must not change: update ``update_idx`` (0-based) falls in the
        critic warm-up. Always False for critic-free estimators (nothing to warm up)."""
        if update_idx < 0:
            raise ConfigError(f"update_idx must be >= 0, got {update_idx}")
        return self.uses_critic and update_idx < self.critic_warmup_updates

    guided_start: float = 0.0
    """Share of multi-app task groups whose rollouts start after a guided prefix: the guide
    (the phone world's expert, ``Trainer(guide=...)``) plays the first k steps, k uniform in
    1 .. its own episode length - 1, the same k for all siblings, then the planner takes over
    (``navrl.agent.guided``). The guide's steps are never trained on; they let RL practise
    the late stages of long tasks (the second app) that it cannot reach on its own yet.
    Evaluation always starts at the beginning. 0 disables it."""

    # --- checks and (de)serialisation -------------------------------------------------------
    def validate(self) -> TrainConfig:
        """Check every field; returns self so calls chain.

        Raises:
            ConfigError: the first invalid value found.
        """
        _check_types(self)
        ints_min = {
            "tasks_per_update": 1,
            "rollouts_per_task": 1,
            "max_steps": 1,
            "num_updates": 0,
            "critic_warmup_updates": 0,
            "ppo_epochs": 1,
            "self_imitation_buffer": 1,
            "minibatch_size": 1,
            "gigppo_hidden_dim": 1,
            "critic_steps": 1,
            "task_pool": 0,
        }
        for name, low in ints_min.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an int, got {value!r}")
            if value < low:
                raise ConfigError(f"{name} must be >= {low}, got {value}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ConfigError(f"seed must be an int, got {self.seed!r}")

        def real(name: str) -> float:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
            return float(value)

        if not 0.0 <= real("gamma") <= 1.0:
            raise ConfigError(f"gamma must be in [0, 1], got {self.gamma}")
        if not 0.0 <= real("lam") <= 1.0:
            raise ConfigError(f"lam must be in [0, 1], got {self.lam}")
        if self.lam != 1.0:
            raise ConfigError(
                "lam != 1 is not supported (needs a dense + terminal two-head critic); use lam=1"
            )
        for name in ("policy_lr", "critic_lr_ratio", "clip_eps"):
            if real(name) <= 0.0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.clip_eps >= 1.0:
            raise ConfigError(f"clip_eps must be < 1, got {self.clip_eps}")
        if real("self_imitation") < 0.0:
            raise ConfigError(f"self_imitation must be >= 0, got {self.self_imitation}")
        if real("pool_replay") < 0.0:
            raise ConfigError(f"pool_replay must be >= 0, got {self.pool_replay}")
        if not 0.0 <= self.sft_augment <= 1.0:
            raise ConfigError(f"sft_augment must be in [0, 1], got {self.sft_augment}")
        for name in ("kl_coef", "entropy_coef", "sft_coef", "weight_decay", "gigpo_step_weight"):
            if real(name) < 0.0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("value_clip", "grad_clip", "rollout_deadline_s"):
            if getattr(self, name) is not None and real(name) <= 0.0:
                raise ConfigError(f"{name} must be > 0 or None, got {getattr(self, name)}")
        if self.reward_preset not in ("default", "cautionary"):
            raise ConfigError(f"reward_preset must be 'default' or 'cautionary', got {self.reward_preset!r}")
        if not 0.0 <= real("guided_start") <= 1.0:
            raise ConfigError(f"guided_start must be in [0, 1], got {self.guided_start}")
        if not 0.0 <= real("explore") < 1.0:
            raise ConfigError(f"explore must be in [0, 1), got {self.explore}")
        if real("rollout_temperature") <= 0.0:
            raise ConfigError(f"rollout_temperature must be > 0, got {self.rollout_temperature}")
        for name, low in (("eval_every", 0), ("eval_episodes", 1), ("checkpoint_every", 1), ("torch_threads", 1),
                          ("sft_batch_size", 1), ("max_masked_updates", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{name} must be an int >= {low}, got {value!r}")
        from navrl.tasks.registry import suites
        known = suites()
        for sname in self.eval_suites:
            if sname not in known:
                raise ConfigError(f"unknown eval suite {sname!r}; choose from {sorted(known)}")
        if not isinstance(self.whiten_advantages, bool):
            raise ConfigError(f"whiten_advantages must be a bool, got {self.whiten_advantages!r}")

        if len(set(self.loss_terms)) != len(self.loss_terms):
            raise ConfigError(f"loss_terms names a term twice: {list(self.loss_terms)}")
        from navrl.rl.losses import loss_spec
        for name in self.loss_terms:
            spec = loss_spec(name)     # UnknownLossError (a ConfigError) for an unknown name
            if spec.coef is not None and not hasattr(self, spec.coef):
                raise ConfigError(f"loss term {name!r} is weighted by {spec.coef!r}, which is no TrainConfig field")

        spec = self.estimator_spec
        if self.rollouts_per_task < spec.min_rollouts_per_task:
            raise ConfigError(f"estimator {spec.name} compares sibling rollouts: rollouts_per_task must be "
                              f">= {spec.min_rollouts_per_task} (its min_rollouts_per_task), "
                              f"got {self.rollouts_per_task}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (estimator as its string), e.g. for YAML or run metadata."""
        out = asdict(self)
        out["estimator"] = str(self.estimator)
        out["eval_suites"] = list(self.eval_suites)
        out["loss_terms"] = list(self.loss_terms)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build and validate from a plain dict.

        Raises:
            ConfigError: unknown keys or invalid values.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown TrainConfig fields: {unknown}")
        data = dict(data)
        for name in ("eval_suites", "loss_terms"):
            if isinstance(data.get(name), list):
                data[name] = tuple(data[name])
        return cls(**data).validate()

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """Field name -> its attribute docstring (for --help texts and generated docs)."""
        return dict(_attribute_docstrings(cls))


@cache
def _type_adapters() -> tuple[tuple[str, Any], ...]:
    """A strict pydantic TypeAdapter per TrainConfig field (from its annotation)."""
    import typing

    from pydantic import TypeAdapter
    hints = typing.get_type_hints(TrainConfig)
    return tuple((f.name, TypeAdapter(hints[f.name])) for f in fields(TrainConfig) if f.name != "estimator")


def _check_types(cfg: TrainConfig) -> None:
    """Every field against its annotation with pydantic in strict mode ("3" is not an int,
    True is not a number, a list of suites is not a float); estimator is checked by name."""
    from pydantic import ValidationError
    for name, adapter in _type_adapters():
        value = getattr(cfg, name)
        if name in ("eval_suites", "loss_terms") and isinstance(value, list):
            value = tuple(value)
        try:
            adapter.validate_python(value, strict=True)
        except ValidationError as e:
            msg = e.errors()[0]["msg"]
            raise ConfigError(f"{name}: {msg[0].lower() + msg[1:]}, got {value!r}") from None


@cache
def _attribute_docstrings(cls: type) -> tuple[tuple[str, str], ...]:
    """(name, docstring) pairs of the string literals written right under annotated fields."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # no source (frozen app, REPL): no docs rather than a crash
        return ()
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    docs: list[tuple[str, str]] = []
    for node, nxt in pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs.append((node.target.id, inspect.cleandoc(nxt.value.value)))
    return tuple(docs)
