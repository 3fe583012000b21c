"""Training configuration: every RL default of docs/design.md §5e, in sections.

:class:`TrainConfig` holds one dataclass per section, each field with its own docstring (the
string literal right under it), readable at runtime through :meth:`TrainConfig.field_docs`:

=================  ===================================================================
``rollout``        how many rollouts per update, how long, how they are scored
``advantage``      returns and the advantage estimator
``policy``         the planner's PPO update: optimiser, minibatches, the loss's terms
``critic``         the critic: warm-up, learning rate, steps, size
``exploration``    how rollouts explore: temperature, kind exploration, guided starts,
                   self-imitation of the planner's own rewarded outputs
``data``           which tasks the updates draw: perturbations, a fixed pool, its replay
``run``            the run around the updates: length, seed, evaluation and checkpoint
                   cadence, threads, the outage stopping rule
=================  ===================================================================

A field is named by its section and name, ``policy.clip_eps``: in ``--set
policy.clip_eps=0.28``, in :meth:`TrainConfig.override` and in the dicts of
:meth:`TrainConfig.from_dict` (nested sections, or dotted names). The flat names of earlier
versions (``clip_eps``) are refused with a message that names the new one; only
:meth:`TrainConfig.from_saved` — a config read back from a checkpoint or run folder that an
earlier version wrote — moves them to their sections.

Importing this module pulls in no torch (the CLI imports :class:`ConfigError` for every
command); validating reads the estimator and loss-term registries, which do.
"""

from __future__ import annotations

import ast
import copy
import inspect
import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from navrl.judge.rewards import REWARD_PRESETS
from navrl.rl.estimators import AdvantageEstimator

if TYPE_CHECKING:
    from navrl.rl.advantages import EstimatorSpec
    from navrl.rl.losses import LossSpec

__all__ = ["ConfigError", "TrainConfig", "RolloutConfig", "AdvantageConfig", "PolicyConfig", "CriticConfig",
           "ExplorationConfig", "DataConfig", "RunConfig", "SECTIONS"]

SELF_IMITATION_SELECT = ("step", "episode")
"""Values of ``exploration.self_imitation_select``."""

OFF_POLICY_RATIO = ("behaviour", "decoupled", "proximal")
"""Values of ``policy.off_policy_ratio``."""


class ConfigError(ValueError):
    """A configuration value is invalid (out of range, wrong kind, unsupported)."""


class UnknownField(ConfigError):
    """A name that is no TrainConfig field, in any version (not an earlier flat name)."""


@dataclass
class RolloutConfig:
    """``rollout``: how many rollouts each update collects, how long they run, how they are
    scored and how long the update waits for them."""

    tasks_per_update: int = 16
    """Distinct task instances sampled per update (docs/design.md §5e: 16)."""

    rollouts_per_task: int = 8
    """Sibling rollouts per task; they form one group for GRPO/GiGPO/GiGPPO (docs/design.md §5e: 8)."""

    max_steps: int = 30
    """Step budget of an episode; running out earns the 'budget exhausted' terminal reward."""

    reward_preset: str = "default"
    """Reward table: "default" (docs/design.md §4b), "cautionary" (the paper's prolonging GRPO reward)
    or "potential" (the default with regressions charged per step the judge counts:
    ``RewardConfig.step_regress``)."""

    rollout_deadline_s: float | None = None
    """Seconds one update's rollouts (leases included) may take; None waits for every episode.
    At the deadline the episodes still running are masked as ``timeout`` stragglers (never
    scored as failures; counted in the update's ``stragglers`` and ``masked_reasons``) and
    their devices go back to the farm, so a slow device cannot stall the synchronous update.
    Size it from the farm's latency: a few times the longest episode's device time."""


@dataclass
class AdvantageConfig:
    """``advantage``: returns and the advantage estimator."""

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

    def __post_init__(self) -> None:
        # Configs arrive from YAML/CLI as strings; keep unknown names for validate() to report.
        if isinstance(self.estimator, str) and not isinstance(self.estimator, AdvantageEstimator):
            try:
                self.estimator = AdvantageEstimator(self.estimator)
            except ValueError:
                pass


@dataclass
class PolicyConfig:
    """``policy``: the planner's PPO update — optimiser, minibatches and the loss's terms
    (``navrl.rl.losses``) with their coefficients."""

    policy_lr: float = 1e-5
    """Learning rate of the planner (the critic uses policy_lr * critic_lr_ratio)."""

    clip_eps: float = 0.2
    """PPO ratio clip range (docs/design.md §5e: 0.2)."""

    off_policy_ratio: str = "decoupled"
    """What PPO's ratio is taken against when the rollouts explore, i.e. sample from a behaviour
    policy mu that mixes the planner with uniform or prior choices (``exploration.explore``,
    ``explore_arg``, ``explore_prior``; without them all three are the same update):

    - ``behaviour``: r = pi / mu, clipped at 1 +- clip_eps. The planner's favourite choice has
      mu < pi_old (a share of the draws went to exploration), so its r starts above 1 + clip_eps
      (~1.4 at explore_arg 0.3) and a positive advantage there moves nothing; an exploratory
      choice's r starts near pi_old / mu, close to 0, and so does what it teaches;
    - ``decoupled``: decoupled PPO (Hilton, Cobbe and Schulman 2022): r = pi / pi_old, pi_old the
      planner's own distribution when it sampled (the trust region is around the planner, not
      around the mixture), each token weighted by the importance weight min(is_weight_cap,
      pi_old / mu), as V-trace truncates (unbiased below the cap);
    - ``proximal``: r = pi / pi_old with no importance weight: a choice exploration made counts
      as if the planner had made it (biased toward what exploration tried, which is then learnt
      at full weight, as self-imitation learns it).

    ``decoupled`` by measurement (docs/results/exploration.md §17): on issue #26's reduction it kept
    the end games ``behaviour`` lost and finished more of the last three steps in every pairing."""

    is_weight_cap: float = 1.0
    """Truncation of ``decoupled``'s importance weight pi_old / mu (V-trace's rho-bar)."""

    ppo_epochs: int = 1
    """Passes over each batch of rollouts per update."""

    minibatch_size: int = 256
    """Planner outputs (steps) per optimiser step."""

    loss_terms: tuple[str, ...] = ("ppo_clip", "kl_ref", "entropy", "ptx", "self_imitation", "factor_entropy")
    """The policy loss's terms by registered name, in the order they are summed
    (``navrl.rl.losses.register_loss``: ppo_clip, kl_ref, entropy, ptx, self_imitation,
    factor_entropy or one a plugin registers); each is weighted by the field its spec names
    (policy.kl_coef, policy.entropy_coef, policy.sft_coef, exploration.self_imitation,
    exploration.entropy_control; 1 for ppo_clip) and left out while that is 0."""

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
    """Max global gradient norm per optimiser step; None disables clipping. (The critic's steps
    are clipped at the same norm.)"""

    weight_decay: float = 0.0
    """AdamW weight decay of the policy parameters."""


@dataclass
class CriticConfig:
    """``critic``: the critic of the critic estimators (ppo, ppo_terminal_only, gigppo)."""

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


@dataclass
class ExplorationConfig:
    """``exploration``: how the rollouts explore beyond the planner's greedy choices, and
    the self-imitation term that keeps what exploration found."""

    rollout_temperature: float = 1.0
    """Sampling temperature of training rollouts (evaluation decodes greedily). The policy PPO
    trains is the tempered one: rollouts record log softmax(logits / T) and the update scores at T."""

    explore: float = 0.0
    """Exploration of the step kind (pointer planner): while sampling rollouts this share of
    the kind's probability is spread uniformly over the legal kinds, so kinds the
    demonstrations never showed (Go home: SFT sees single-app tasks only) are still tried.
    The recorded log-probs are of that mixture, so PPO's ratio corrects for it."""

    guided_start: float = 0.0
    """Share of multi-app task groups whose rollouts start after a guided prefix: the guide
    (the phone world's expert, ``Trainer(guide=...)``) plays the first k steps, k uniform in
    1 .. its own episode length - 1, the same k for all siblings, then the planner takes over
    (``navrl.agent.guided``). The guide's steps are never trained on; they let RL practise
    the late stages of long tasks (the second app) that it cannot reach on its own yet.
    Evaluation always starts at the beginning. 0 disables it."""

    self_imitation: float = 0.0
    """Weight of a self-imitation term (Oh et al., 2018) added to every policy minibatch: the
    log-likelihood of the planner's own past outputs that earned a positive step reward and
    a positive advantage (a buffer of the last ``self_imitation_buffer``). Unlike the clipped
    PPO ratio, which lets a rare good decision grow ~1.2x per update, it pulls such decisions
    up directly. 0 disables it."""

    self_imitation_buffer: int = 4096
    """Outputs kept for the self-imitation term (first in, first out). The buffer is not
    checkpointed (prompts are large): a resumed run refills it from its next updates."""

    self_imitation_select: str = "step"
    """Which outputs the self-imitation buffer takes, each with a positive advantage: ``step``,
    those whose own step reward is positive (a dense judge's success); ``episode``, every output
    of a successful episode (Oh et al.'s (R - V)+ with the episode's return: where the judge is
    sparse — a MiniWoB++ page rewards only the step that finishes — the decisions before the
    last one earn no step reward, and a rare success found by exploration is otherwise imitated
    only in its last decision)."""

    hindsight: bool = False
    """Hindsight relabelling (``navrl.rl.hindsight``): an episode that declared completion
    without reaching its goal but reached another goal its task names (the phone world's
    templates with an ``achieved`` hook: the email, message or note it did write), checked by
    the task's own checker, joins the self-imitation buffer as a success of that goal, its
    prompts rewritten to it. Needs ``self_imitation`` > 0 (the term that learns from the
    buffer) and judges that take device snapshots (the phone world's oracle). Off: in the
    demo preset's training it relabels 5 of 1,024 episodes in 8 updates, too few to learn from
    (docs/results/exploration.md §22)."""

    # hand-over curriculum, argument exploration and dynamic sampling (issue 26)
    handover_k: int = 0
    """Multi-app task groups start after a guided prefix that ends ``handover_k`` steps before
    the end of the guide's own episode (1: the learner takes only the last decision), the same
    for all siblings (``navrl.rl.curriculum``). Replaces ``guided_start``'s uniform k where
    both are on. 0 disables it."""

    handover_share: float = 1.0
    """Share of the multi-app task groups that ``handover_k`` (and its curriculum) starts after a
    guided prefix; the others start at the beginning, so one run practises both ends of the
    task: the end game from hand-overs, the first app from the start (the dense step rewards
    carry the learner forward; without hand-overs the end it never reaches decays)."""

    curriculum_threshold: float = 0.0
    """Reverse curriculum of the hand-over point (Salimans & Chen 2018): per template, the
    point moves one step earlier once the success rate of the last ``curriculum_window``
    episodes started there reaches this, until the tasks start from the beginning. 0 keeps
    the point at ``handover_k``."""

    curriculum_practice: float = 0.0
    """Share of the curriculum's guided groups that start at a point it has already passed (drawn
    uniformly from 1 .. current - 1 steps before the end) instead of the current one: once the
    point moves, nothing else starts at the later points, and the end game learnt there decays
    (docs/results/exploration.md). 0: every guided group at the current point."""

    frontier_share: float = 0.0
    """Share of the curriculum's guided groups that start at the template's *forward frontier*
    instead (``HandoverSchedule.frontier``): the furthest step its last ``curriculum_window``
    episodes from the beginning reached before the judge first failed one — the guide plays what
    the learner already plays alone and hands over where it leaves the path (Go-Explore's return
    to the furthest cell), when that is earlier than the curriculum's point. Measured reason
    (docs/results/exploration.md §9-10): the forward frontier stops at the first step inside the
    second app and the curriculum's point, moving back from the end, reaches it late or never;
    that state is visited by a few from-the-start rollouts an update. 0 disables it."""

    curriculum_window: int = 16
    """Episodes at the current hand-over point the curriculum's success rate is measured over."""

    curriculum_step: float = 0.0
    """How far a move of the reverse curriculum goes: 0 one step; s > 0 ``max(1, round(s x L))``
    steps, L the longest guide episode of the key (moves proportional to the episode's length)."""

    curriculum_probe: bool = False
    """The reverse curriculum counts the outcomes of *greedy probes* instead of the training
    rollouts: each update, every guided task group started at its key's current point is played
    once more, decoded greedily as evaluation decodes, from the same hand-over (not trained
    on). Measured reason (docs/results/exploration.md §12): the training rollouts sample at
    the rollout temperature with argument exploration, whose noise holds their success at the
    current point near 0.4-0.6 while the greedy planner's is higher, so the point moved about
    one step per 40 updates. False: the training rollouts' outcomes move it."""

    curriculum_shared: bool = False
    """The reverse curriculum keeps one hand-over point ("steps before the end") for all task
    templates instead of one per template, so every multi-app episode counts toward its moves."""

    explore_arg: float = 0.0
    """Exploration of a decision's argument (pointer planner): while sampling rollouts this share
    of the node / text-span factor's probability is spread uniformly over its coarse legal
    choices (nodes accepting the kind; whole texts and quoted goal spans), so the one whole
    fact the first app showed is tried, not only the goal spans SFT always copied. Recorded
    in the log-probs like ``explore``. 0 disables it."""

    explore_arg_by_source: bool = False
    """Spread ``explore_arg``'s share of a text argument over the candidates' *sources* — goal,
    answers and memory, screen labels, screen values, fixed answers — equally, and within a
    source by the policy's own probabilities renormalised there, instead of uniformly over the
    whole texts. Measured reason (docs/results/exploration.md §9): after RL on multi-app tasks
    the text factor puts 0.99+ on the memory source, so the goal span a second app's first
    field needs ("Tom Becker", the policy's own best goal span there) gets ~1e-5 and is never
    tried; by source it gets about explore_arg / 3."""

    explore_prior: float = 0.0
    """Share of each decision factor's probability (kind, node or text span) that rollouts draw
    from the planner training started from (a frozen copy, e.g. the SFT planner) at the same
    state: RL that learnt `Go home` at the end of a first app applies it inside the second app
    too (kind Type 0.001 where SFT gives it 1.0; maps/weather's `Tap "Title"`, SFT 7/7, RL 0/7:
    docs/results/exploration.md §9), and what SFT knew there is never tried again. Recorded in
    the log-probs like ``explore``; ``explore + explore_prior`` and ``explore_arg +
    explore_prior`` must stay below 1. 0 disables it (no copy is kept)."""

    entropy_control: float = 0.0
    """Largest weight of the adaptive per-factor entropy bonus (``navrl.rl.entropy_control``,
    Skywork-OR1's adaptive entropy coefficient per decision factor): each update, a factor whose
    entropy on the rollouts is below its ``entropy_target_*`` gets a bonus weighted
    ``entropy_control`` x a_f, with a_f in [0, 1] rising by ``entropy_control_rate`` per update
    while it stays below and falling as fast above (loss term ``factor_entropy``). Needs
    ``run.diagnostics_samples`` > 0 (the entropy is measured there). 0 disables it."""

    entropy_target_kind: float = 0.5
    """Target entropy (nats) of the kind factor under ``entropy_control`` (0: not controlled)."""

    entropy_target_node: float = 0.0
    """Target entropy (nats) of the node factor under ``entropy_control`` (0: not controlled)."""

    entropy_target_text: float = 0.0
    """Target entropy (nats) of the text-span factor under ``entropy_control`` (0: not controlled)."""

    entropy_control_rate: float = 0.1
    """How far a factor's coefficient a_f moves per update under ``entropy_control`` (a_f in [0, 1])."""

    unanimous_fail_penalty: float = 0.0
    """Advantage given to a step the step judge failed where its credit says nothing about its
    choice — the judge failed every sibling step at that state too (comparing their returns then
    measures only the luck after it), or the estimator gave it none (all fared alike): ``-penalty`` instead (``navrl.rl.advantages.unanimous_failure_credit``; negative sample
    reinforcement, Zhu et al. 2025). Measured reason (docs/results/exploration.md §9-10): RL's
    `Go home`, right at the end of a first app, is applied by every rollout inside the second app,
    where the judge fails it and no comparison pushes back; lowering it hands its probability to
    the other choices as the policy ranks them. In group-normalised units; 0 disables it."""

    dynamic_sampling: int = 0
    """DAPO's dynamic sampling (``navrl.rl.sampling``): task groups whose rollouts all succeed
    or all fail are dropped and fresh tasks rolled out in their place, up to this many extra
    rollout rounds per update; the loss sees only groups whose siblings disagree. 0 disables it."""


@dataclass
class DataConfig:
    """``data``: which tasks the updates draw (the world's perturbations, a fixed pool, its
    prioritised replay)."""

    train_perturb: bool = True
    """Train on the world with its default perturbations (pop-ups, loading, shuffles)."""

    task_pool: int = 0
    """0: every update draws fresh train tasks. N > 0: draw N task instances once and cycle
    through them, tasks_per_update at a time, so each task group is revisited every
    N / tasks_per_update updates (a planner that generalises across seeds learns its templates
    from repeats; measured in docs/results/pointer_planner.md)."""

    pool_replay: float = 0.0
    """With a task pool: 0 cycles it in order; T > 0 draws each update's tasks by prioritised
    level replay (``navrl.rl.replay``): tasks whose sibling rollouts disagreed most (mean
    |advantage|) more often, rank-based with temperature T, 30% by staleness."""

    learnability_sampling: int = 0
    """0: each update's fresh tasks as the source draws them. M >= 2: draw M x tasks_per_update
    fresh tasks and keep tasks_per_update of them, each family (``Task.template``) weighted by
    its learnability p (1 - p) + ``learnability_floor``, p its recent success rate
    (``navrl.rl.learnability``): rollouts go where siblings can disagree, not to families already
    solved or still hopeless. Fresh draws only (not with ``task_pool``). Off by measurement:
    on 12 MiniWoB++ pages it starved a page at 0% that uniform draws taught (bisect-angle 0 vs
    80%), -5.8 points (docs/results/exploration.md §21)."""

    learnability_floor: float = 0.02
    """With ``learnability_sampling``: added to every family's weight (p (1 - p) is at most 0.25),
    so solved and hopeless families are still drawn now and then."""

    learnability_decay: float = 0.5
    """With ``learnability_sampling``: each visit of a family multiplies its earlier success
    counts by this (the rate follows the moving policy)."""

    learnability_unsolved_visits: int = 0
    """With ``learnability_sampling``: a family no rollout has solved yet keeps the largest weight
    (1/4 + floor) for its first N visits, then falls to p (1 - p) + floor: without it, p (1 - p)
    starves the families RL has to discover (``navrl.rl.learnability``). 0: off. Not yet
    measured against uniform draws (docs/results/exploration.md §21)."""

    multi_app_share: float = 0.0
    """Share of each update's fresh task groups (or of the ``task_pool``) drawn from tasks that use more than one app
    (``navrl.rl.sampling.draw_with_share``; the source's distribution within each kind). The
    phone world's train suite holds 7 multi-app templates of 47, ~2.4 of 16 groups an update:
    too few to learn tasks no demonstration showed. 0: the source's own mix."""


@dataclass
class RunConfig:
    """``run``: the run around the updates — its length, seed, evaluation and checkpoint
    cadence, threads and the outage stopping rule."""

    num_updates: int = 336
    """Policy updates in a run (the paper's two epochs over its task set took 336)."""

    seed: int = 0
    """Seed of task sampling, rollouts and initialisation."""

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

    overlap: bool = False
    """Collect the next update's rollouts while a learner process learns from the last ones
    (one-step off-policy, :mod:`navrl.rl.overlap`): an update costs about the larger of rollout
    and learning instead of their sum when two cores are free. The rollouts are sampled by the
    planner one update old; PPO's ratio is taken against the planner at the update's start,
    recomputed on them (with ``policy.off_policy_ratio`` ``decoupled``: importance-weighted
    against what sampled them). Each process uses one torch thread (``torch_threads`` is not
    read). Off: the sequential update, reproducible update by update. Measured: 1.5x faster per update on two
    cores, but less learnt per update on the 30-update reduction (docs/results/exploration.md §19)."""

    max_masked_updates: int = 3
    """Stop the run (:class:`navrl.errors.Outage`, checkpoint saved) after this many updates in a
    row whose every trajectory was masked: an outage is not training. 0 never stops."""

    diagnostics_samples: int = 256
    """Exploration diagnostics logged with every update under ``diag`` (navrl.rl.diagnostics):
    the entropy of each decision factor is measured on up to this many of the update's samples
    (one extra forward pass without gradients, before the update); groups with zero outcome
    variance, zero-advantage steps and success per task family always. 0: no entropy pass."""


SECTIONS: dict[str, type] = {
    "rollout": RolloutConfig,
    "advantage": AdvantageConfig,
    "policy": PolicyConfig,
    "critic": CriticConfig,
    "exploration": ExplorationConfig,
    "data": DataConfig,
    "run": RunConfig,
}
"""Section name -> its dataclass, in :class:`TrainConfig`'s order."""


def _paths() -> dict[str, str]:
    """Each field's flat name (as earlier versions spelt it) -> its dotted name."""
    return {f.name: f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls)}


_PATHS = _paths()
"""Flat name -> ``section.field``; a field's name is unique across the sections."""


@dataclass
class TrainConfig:
    """Online RL of the planner, in sections (see the module docstring): rollout sizes,
    returns and advantages, the policy update, the critic, exploration, data and the run."""

    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    """Rollouts per update, their length, scoring and deadline."""

    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)
    """Returns and the advantage estimator."""

    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """The planner's PPO update and the loss's terms."""

    critic: CriticConfig = field(default_factory=CriticConfig)
    """The critic of the critic estimators."""

    exploration: ExplorationConfig = field(default_factory=ExplorationConfig)
    """Sampling temperature, kind exploration, guided starts, self-imitation."""

    data: DataConfig = field(default_factory=DataConfig)
    """Which tasks the updates draw."""

    run: RunConfig = field(default_factory=RunConfig)
    """Length, seed, evaluation and checkpoint cadence, threads, the outage rule."""

    def __getattr__(self, name: str) -> Any:
        # only for names the object lacks: an earlier version's flat field says where it went
        path = _PATHS.get(name)
        if path is not None:
            raise AttributeError(f"TrainConfig.{name} is now TrainConfig.{path}")
        raise AttributeError(f"'TrainConfig' object has no attribute {name!r}")

    # --- names ------------------------------------------------------------------------------
    @staticmethod
    def check_name(name: str) -> str:
        """``name`` if it is a field's dotted name (``policy.clip_eps``).

        Raises:
            ConfigError: a flat name of an earlier version (the message names the new one), or
                a name that is no field.
        """
        section, dot, leaf = name.partition(".")
        cls = SECTIONS.get(section)
        if dot and cls is not None and leaf in {f.name for f in fields(cls)}:
            return name
        if name in _PATHS:
            raise ConfigError(f"{name!r} is now {_PATHS[name]!r} (TrainConfig fields are named by section)")
        if dot and leaf in _PATHS:
            raise ConfigError(f"no TrainConfig field {name!r}: {leaf!r} is {_PATHS[leaf]!r}")
        if cls is not None and not dot:
            raise ConfigError(f"{name!r} is a TrainConfig section; name one of its fields ({name}.FIELD)")
        raise UnknownField(f"unknown TrainConfig field {name!r}; fields are SECTION.FIELD, sections "
                          f"{', '.join(SECTIONS)} (TrainConfig.field_docs() lists them)")

    def get(self, name: str) -> Any:
        """The value of the field ``name`` (dotted: ``policy.clip_eps``)."""
        section, _, leaf = self.check_name(name).partition(".")
        return getattr(getattr(self, section), leaf)

    def override(self, changes: Mapping[str, Any]) -> TrainConfig:
        """A copy with ``changes`` applied, not yet validated: dotted name -> value
        (``{"policy.clip_eps": 0.28}``, as ``--set``) and/or a section -> its fields
        (``{"policy": {"clip_eps": 0.28}}``, as YAML). A list for a tuple field (JSON has no
        tuples) becomes a tuple.

        Raises:
            ConfigError: a name that is no field (a flat name of an earlier version: the message
                names the new one).
        """
        out = replace(self, **{s: copy.copy(getattr(self, s)) for s in SECTIONS})    # (no section shared)
        by_section: dict[str, dict[str, Any]] = {}
        for name, value in _dotted(changes).items():
            section, _, leaf = self.check_name(name).partition(".")
            by_section.setdefault(section, {})[leaf] = value
        for section, vals in by_section.items():
            cur = getattr(self, section)
            vals = {k: tuple(v) if isinstance(v, list) and isinstance(getattr(cur, k), tuple) else v
                    for k, v in vals.items()}
            setattr(out, section, replace(cur, **vals))
        return out

    # --- derived values ---------------------------------------------------------------------
    @property
    def critic_lr(self) -> float:
        """Critic learning rate = policy.policy_lr * critic.critic_lr_ratio."""
        return self.policy.policy_lr * self.critic.critic_lr_ratio

    @property
    def trajectories_per_update(self) -> int:
        """Rollouts per update = rollout.tasks_per_update * rollout.rollouts_per_task (docs/design.md §5e: 128)."""
        return self.rollout.tasks_per_update * self.rollout.rollouts_per_task

    @property
    def estimator_spec(self) -> EstimatorSpec:
        """The estimator's registry entry (critic kind, screenshot hashes, minimum group size).

        Raises:
            ConfigError: no estimator is registered under that name.
        """
        # the registry lives with the estimator functions (torch): imported on first use only
        from navrl.rl.advantages import UnknownEstimatorError, estimator_spec, registered_estimators

        try:
            return estimator_spec(self.advantage.estimator)
        except UnknownEstimatorError:
            raise ConfigError(f"unknown estimator {str(self.advantage.estimator)!r}; registered: "
                              f"{registered_estimators()} (register one with navrl.rl.advantages.register_estimator, "
                              "e.g. in a module given to navrl train --plugin)") from None

    @property
    def uses_critic(self) -> bool:
        """True when the estimator's spec names a critic (ppo, ppo_terminal_only, gigppo, ...)."""
        return self.estimator_spec.uses_critic

    @property
    def policy_loss(self) -> list[tuple[LossSpec, float]]:
        """The policy loss's terms in use: (registry entry, weight) for each of
        ``policy.loss_terms`` whose coefficient is not 0, in order; the weight is the
        coefficient (its negative for a bonus).

        Raises:
            ConfigError: a name no term is registered under (``UnknownLossError``).
        """
        from navrl.rl.losses import loss_spec   # the registry lives with the terms (torch)

        out = []
        for name in self.policy.loss_terms:
            spec = loss_spec(name)
            coef = 1.0 if spec.coef is None else float(self.get(spec.coef))
            if coef != 0.0:
                out.append((spec, -coef if spec.maximise else coef))
        return out

    def policy_frozen(self, update_idx: int) -> bool:
        """True while the policy must not change: update ``update_idx`` (0-based) falls in the
        critic warm-up. Always False for critic-free estimators (nothing to warm up)."""
        if update_idx < 0:
            raise ConfigError(f"update_idx must be >= 0, got {update_idx}")
        return self.uses_critic and update_idx < self.critic.critic_warmup_updates

    # --- checks and (de)serialisation -------------------------------------------------------
    def validate(self) -> TrainConfig:
        """Check every field; returns self so calls chain. Messages name fields by their
        dotted names.

        Raises:
            ConfigError: the first invalid value found.
        """
        for section, cls in SECTIONS.items():
            if not isinstance(getattr(self, section), cls):
                raise ConfigError(f"{section} must be a {cls.__name__}, got {getattr(self, section)!r}")
        _check_types(self)
        v = {f.name: getattr(getattr(self, s), f.name) for s, cls in SECTIONS.items() for f in fields(cls)}
        P = _PATHS
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
            "handover_k": 0,
            "curriculum_window": 1,
            "dynamic_sampling": 0,
            "learnability_sampling": 0,
            "learnability_unsolved_visits": 0,
        }
        for name, low in ints_min.items():
            value = v[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{P[name]} must be an int, got {value!r}")
            if value < low:
                raise ConfigError(f"{P[name]} must be >= {low}, got {value}")
        if not isinstance(v["seed"], int) or isinstance(v["seed"], bool):
            raise ConfigError(f"{P['seed']} must be an int, got {v['seed']!r}")

        def real(name: str) -> float:
            value = v[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{P[name]} must be a finite number, got {value!r}")
            return float(value)

        for name in ("gamma", "lam", "guided_start", "curriculum_threshold", "curriculum_step", "curriculum_practice",
                     "handover_share", "multi_app_share", "frontier_share", "learnability_decay"):
            if not 0.0 <= real(name) <= 1.0:
                raise ConfigError(f"{P[name]} must be in [0, 1], got {v[name]}")
        if v["lam"] != 1.0:
            raise ConfigError(
                f"{P['lam']} != 1 is not supported (needs a dense + terminal two-head critic); use {P['lam']}=1"
            )
        for name in ("policy_lr", "critic_lr_ratio", "clip_eps"):
            if real(name) <= 0.0:
                raise ConfigError(f"{P[name]} must be > 0, got {v[name]}")
        if v["clip_eps"] >= 1.0:
            raise ConfigError(f"{P['clip_eps']} must be < 1, got {v['clip_eps']}")
        if v["learnability_sampling"] == 1:
            raise ConfigError(f"{P['learnability_sampling']} must be 0 (off) or >= 2 (candidates per kept task), got 1")
        if v["learnability_sampling"] and v["task_pool"]:
            raise ConfigError(f"{P['learnability_sampling']} draws fresh tasks: it does not combine with {P['task_pool']}")
        if real("learnability_floor") < 0.0:
            raise ConfigError(f"{P['learnability_floor']} must be >= 0, got {v['learnability_floor']}")
        if real("unanimous_fail_penalty") < 0.0:
            raise ConfigError(f"{P['unanimous_fail_penalty']} must be >= 0, got {v['unanimous_fail_penalty']}")
        for name in ("entropy_control", "entropy_target_kind", "entropy_target_node", "entropy_target_text"):
            if real(name) < 0.0:
                raise ConfigError(f"{P[name]} must be >= 0, got {v[name]}")
        if not 0.0 < real("entropy_control_rate") <= 1.0:
            raise ConfigError(f"{P['entropy_control_rate']} must be in (0, 1], got {v['entropy_control_rate']}")
        if v["entropy_control"] > 0 and v["diagnostics_samples"] == 0:
            raise ConfigError(f"{P['entropy_control']} > 0 measures each factor's entropy on the update's samples: "
                              f"set {P['diagnostics_samples']} > 0")
        if real("self_imitation") < 0.0:
            raise ConfigError(f"{P['self_imitation']} must be >= 0, got {v['self_imitation']}")
        if v["off_policy_ratio"] not in OFF_POLICY_RATIO:
            raise ConfigError(f"{P['off_policy_ratio']} must be one of {', '.join(OFF_POLICY_RATIO)}, "
                              f"got {v['off_policy_ratio']!r}")
        if real("is_weight_cap") <= 0.0:
            raise ConfigError(f"{P['is_weight_cap']} must be > 0, got {v['is_weight_cap']}")
        if v["hindsight"] and v["self_imitation"] == 0:
            raise ConfigError(f"{P['hindsight']} puts relabelled episodes in the self-imitation buffer: "
                              f"set {P['self_imitation']} > 0")
        if v["self_imitation_select"] not in SELF_IMITATION_SELECT:
            raise ConfigError(f"{P['self_imitation_select']} must be one of {', '.join(SELF_IMITATION_SELECT)}, "
                              f"got {v['self_imitation_select']!r}")
        if real("pool_replay") < 0.0:
            raise ConfigError(f"{P['pool_replay']} must be >= 0, got {v['pool_replay']}")
        if not 0.0 <= v["sft_augment"] <= 1.0:
            raise ConfigError(f"{P['sft_augment']} must be in [0, 1], got {v['sft_augment']}")
        for name in ("kl_coef", "entropy_coef", "sft_coef", "weight_decay", "gigpo_step_weight"):
            if real(name) < 0.0:
                raise ConfigError(f"{P[name]} must be >= 0, got {v[name]}")
        for name in ("value_clip", "grad_clip", "rollout_deadline_s"):
            if v[name] is not None and real(name) <= 0.0:
                raise ConfigError(f"{P[name]} must be > 0 or None, got {v[name]}")
        if v["reward_preset"] not in REWARD_PRESETS:
            raise ConfigError(f"{P['reward_preset']} must be one of {', '.join(sorted(REWARD_PRESETS))}, "
                              f"got {v['reward_preset']!r}")
        if not 0.0 <= real("explore_arg") < 1.0:
            raise ConfigError(f"{P['explore_arg']} must be in [0, 1), got {v['explore_arg']}")
        if not 0.0 <= real("explore") < 1.0:
            raise ConfigError(f"{P['explore']} must be in [0, 1), got {v['explore']}")
        if not 0.0 <= real("explore_prior") or max(real("explore"), real("explore_arg")) + real("explore_prior") >= 1.0:
            raise ConfigError(f"{P['explore_prior']} must be >= 0 with explore + explore_prior and explore_arg + "
                              f"explore_prior below 1, got {v['explore_prior']}")
        if real("rollout_temperature") <= 0.0:
            raise ConfigError(f"{P['rollout_temperature']} must be > 0, got {v['rollout_temperature']}")
        for name, low in (("eval_every", 0), ("eval_episodes", 1), ("checkpoint_every", 1), ("torch_threads", 1),
                          ("sft_batch_size", 1), ("max_masked_updates", 0), ("diagnostics_samples", 0)):
            value = v[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{P[name]} must be an int >= {low}, got {value!r}")
        from navrl.tasks.registry import suites
        known = suites()
        for sname in v["eval_suites"]:
            if sname not in known:
                raise ConfigError(f"unknown eval suite {sname!r} in {P['eval_suites']}; choose from {sorted(known)}")
        if not isinstance(v["whiten_advantages"], bool):
            raise ConfigError(f"{P['whiten_advantages']} must be a bool, got {v['whiten_advantages']!r}")
        terms = v["loss_terms"]
        if len(set(terms)) != len(terms):
            raise ConfigError(f"{P['loss_terms']} names a term twice: {list(terms)}")
        from navrl.rl.losses import loss_spec
        for name in terms:
            spec = loss_spec(name)     # UnknownLossError (a ConfigError) for an unknown name
            if spec.coef is not None:
                try:
                    self.check_name(spec.coef)
                except ConfigError:
                    raise ConfigError(f"loss term {name!r} is weighted by {spec.coef!r}, which is no TrainConfig "
                                      "field") from None

        spec = self.estimator_spec
        if v["rollouts_per_task"] < spec.min_rollouts_per_task:
            raise ConfigError(f"estimator {spec.name} compares sibling rollouts: {P['rollouts_per_task']} must be "
                              f">= {spec.min_rollouts_per_task} (its min_rollouts_per_task), "
                              f"got {v['rollouts_per_task']}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict, one dict per section (estimator as its string, tuples as
        lists), e.g. for YAML, JSON or a checkpoint."""
        out: dict[str, Any] = {}
        for section, cls in SECTIONS.items():
            sec = getattr(self, section)
            d = {}
            for f in fields(cls):
                value = getattr(sec, f.name)
                d[f.name] = list(value) if isinstance(value, tuple) else value
            out[section] = d
        out["advantage"]["estimator"] = str(self.advantage.estimator)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build and validate from a dict a user wrote: sections as nested dicts
        (``{"policy": {"clip_eps": 0.28}}``, :meth:`to_dict`'s form) or dotted names
        (``{"policy.clip_eps": 0.28}``); fields not given keep their defaults.

        Raises:
            ConfigError: unknown names (a flat name of an earlier version: the message names
                the new one) or invalid values.
        """
        return cls().override(data).validate()

    @classmethod
    def from_saved(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build and validate from a config read back from a file that navrl wrote (a
        checkpoint's ``config``, a run folder's record): as :meth:`from_dict`, and a flat dict
        of an earlier version (``{"clip_eps": 0.2, ...}``) has its names moved to their
        sections first (:func:`migrate_saved`). A config saved before ``policy.off_policy_ratio``
        existed ran with the ratio against the behaviour policy: it resumes with that."""
        out = migrate_saved(data)
        if any(k.startswith("policy.") for k in out) and "policy.off_policy_ratio" not in out:
            out["policy.off_policy_ratio"] = "behaviour"
        return cls.from_dict(out)

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """Dotted field name -> its attribute docstring (for --help texts and generated docs),
        section by section."""
        return {f"{s}.{name}": doc for s, sc in SECTIONS.items() for name, doc in _attribute_docstrings(sc)}


def _dotted(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (nested sections and/or dotted names) as dotted name -> value."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"a TrainConfig dict must map names to values, got {type(data).__name__}")
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in SECTIONS and isinstance(value, Mapping):
            for leaf, v in value.items():
                out[f"{key}.{leaf}"] = v
        else:
            out[str(key)] = value
    return out


def migrate_saved(data: Mapping[str, Any]) -> dict[str, Any]:
    """A saved config (or saved overrides) with an earlier version's flat names moved to
    their sections (``clip_eps`` -> ``policy.clip_eps``), as dotted name -> value; names that
    are already dotted or sections stay. Only for files navrl wrote: a user's config with
    flat names is refused (:meth:`TrainConfig.check_name`)."""
    out = _dotted(data)
    return {_PATHS.get(k, k): v for k, v in out.items()}


@cache
def _type_adapters() -> tuple[tuple[str, str, Any], ...]:
    """(section, field, a strict pydantic TypeAdapter from its annotation) per field."""
    import typing

    from pydantic import TypeAdapter
    out = []
    for s, cls in SECTIONS.items():
        hints = typing.get_type_hints(cls)
        out += [(s, f.name, TypeAdapter(hints[f.name])) for f in fields(cls) if f.name != "estimator"]
    return tuple(out)


def _check_types(cfg: TrainConfig) -> None:
    """Every field against its annotation with pydantic in strict mode ("3" is not an int,
    True is not a number, a list of suites is not a float); estimator is checked by name."""
    from pydantic import ValidationError
    for section, name, adapter in _type_adapters():
        value = getattr(getattr(cfg, section), name)
        if name in ("eval_suites", "loss_terms") and isinstance(value, list):
            value = tuple(value)
        try:
            adapter.validate_python(value, strict=True)
        except ValidationError as e:
            msg = e.errors()[0]["msg"]
            raise ConfigError(f"{section}.{name}: {msg[0].lower() + msg[1:]}, got {value!r}") from None


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
