"""Returns and advantages (docs/design.md §5). Pure functions, no gradient.

Batch layout used throughout (B trajectories, T = longest episode in the batch):

* ``step_rewards``     float [B, T]  dense per-step reward r_t (judge verdicts, ask-user, ...)
* ``terminal_rewards`` float [B]     terminal reward R (undiscounted)
* ``step_mask``        bool  [B, T]  True on real steps, False on padding; a prefix mask
* ``valid``            bool  [B]     False for infrastructure failures (masked trajectories)
* ``group_ids``        long  [B]     task group: trajectories of the same task instance
* ``values``           float [B, T]  critic estimate V(s_t) (ppo family only)
* ``state_keys``       long  [B, T]  state identity ids for GiGPO, -1 on padding

An invalid trajectory counts as if its ``step_mask`` were all False: it gets 0 everywhere and
never influences a valid output (not the returns, not the group statistics, not the whitening
statistics). Values found on padding or in invalid trajectories are never read arithmetically
(``torch.where`` rather than multiplication), so even NaN there cannot leak.

The estimator registry here is the only list of estimators: each :class:`EstimatorSpec` says
what the trainer must provide (critic kind, screenshot hashes, sibling rollouts). A new
estimator is one function decorated with :func:`register_estimator`; the trainer dispatches
only through :func:`compute_advantages` / :func:`estimator_spec`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

import torch
from torch import Tensor

from navrl.rl.estimators import AdvantageEstimator

__all__ = [
    "GIGPO_ANCHORED",
    "anchored_step_advantages",
    "gigpo_anchored_estimator",
    "AdvantageEstimator",
    "AdvantageInputs",
    "AdvantageOutputs",
    "DuplicateEstimatorError",
    "UnknownEstimatorError",
    "EstimatorFn",
    "EstimatorSpec",
    "CriticKind",
    "CRITIC_KINDS",
    "register_estimator",
    "unregister_estimator",
    "estimator_spec",
    "get_estimator",
    "estimator_needs_values",
    "registered_estimators",
    "compute_advantages",
    "effective_step_mask",
    "discounted_returns",
    "masked_mean",
    "masked_whiten",
    "grpo_advantages",
    "trajectory_scores",
    "gigpo_step_advantages",
    "build_state_keys",
]

WHITEN_EPS = 1e-8  # docs/design.md §5: A = (A - mu) / (std + 1e-8)
GRPO_EPS = 1e-6  # docs/design.md §5d: (S - mean_g) / (std_g + 1e-6)


# --------------------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------------------


def effective_step_mask(step_mask: Tensor, valid: Tensor | None = None) -> Tensor:
    """Steps that count: real steps of valid trajectories.

    Args:
        step_mask: bool [B, T].
        valid: bool [B] or None (all valid).
    Returns:
        bool [B, T].
    """
    mask = step_mask.bool()
    if valid is not None:
        mask = mask & valid.bool().unsqueeze(-1)
    return mask


@torch.no_grad()
def discounted_returns(
    step_rewards: Tensor,
    terminal_rewards: Tensor,
    step_mask: Tensor,
    gamma: float,
) -> Tensor:
    """G_t = sum_{k=t}^{T-1} gamma^(k-t) r_k + R, and 0 on padding.

    The dense rewards are discounted; the terminal reward R is added undiscounted to every real
    step, so a long route to success keeps full credit for the finish (docs/design.md §5).

    Args:
        step_rewards: float [B, T] dense rewards r_t (ignored where ``step_mask`` is False).
        terminal_rewards: float [B] terminal reward R.
        step_mask: bool [B, T] real steps (prefix mask). Pass ``step_mask & valid[:, None]`` to
            zero invalid trajectories as well.
        gamma: discount in [0, 1].
    Returns:
        float [B, T] returns G, 0 where ``step_mask`` is False.
    """
    mask = step_mask.bool()
    dtype = step_rewards.dtype if step_rewards.is_floating_point() else torch.get_default_dtype()
    r = torch.where(mask, step_rewards.to(dtype), torch.zeros((), dtype=dtype, device=step_rewards.device))
    T = r.shape[-1]
    # Discount matrix D[k, t] = gamma^(k - t) for k >= t, else 0; then G_dense = r @ D.
    # One matmul instead of a Python loop over T; exact powers (no gamma^-t rescaling, which
    # would overflow float32 for gamma = 0.5 and long episodes). 0^0 = 1 keeps gamma = 0 right.
    idx = torch.arange(T, device=r.device)
    lag = idx.unsqueeze(1) - idx.unsqueeze(0)  # [k, t] = k - t
    disc = torch.where(
        lag >= 0,
        torch.pow(torch.tensor(float(gamma), dtype=dtype, device=r.device), lag.clamp(min=0).to(dtype)),
        torch.zeros((), dtype=dtype, device=r.device),
    )
    dense = r @ disc
    R = terminal_rewards.to(dtype).unsqueeze(-1)
    return torch.where(mask, dense + R, torch.zeros((), dtype=dtype, device=r.device))


@torch.no_grad()
def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``x`` over entries where ``mask`` is True (0 if there are none).

    Args:
        x: float [...]; mask: bool, same shape.
    Returns:
        float scalar tensor.
    """
    mask = mask.bool()
    n = mask.sum()
    total = torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum()
    return total / n.clamp(min=1).to(x.dtype)


@torch.no_grad()
def masked_whiten(x: Tensor, mask: Tensor, eps: float = WHITEN_EPS) -> Tensor:
    """(x - mu) / (std + eps) with mu, std over valid entries only; masked entries set to 0.

    ``std`` is the unbiased (Bessel-corrected, n - 1) standard deviation of the valid entries.
    Masked entries never enter the statistics, so padding and invalid trajectories cannot
    shrink the spread and inflate genuine advantages. With fewer than two valid entries the
    spread is undefined: std is taken as 0, so one valid entry whitens to exactly 0.

    Args:
        x: float [...] values to whiten (e.g. advantages [B, T]).
        mask: bool, same shape as ``x``.
        eps: added to std (docs/design.md §5: 1e-8).
    Returns:
        float tensor, same shape as ``x``; 0 where ``mask`` is False.
    """
    mask = mask.bool()
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    n = mask.sum().to(x.dtype)
    mu = torch.where(mask, x, zero).sum() / n.clamp(min=1)
    centred = torch.where(mask, x - mu, zero)
    var = (centred * centred).sum() / (n - 1).clamp(min=1)
    return torch.where(mask, centred / (var.sqrt() + eps), zero)


class _GroupIndex(NamedTuple):
    inverse: Tensor  # long [B] dense group index 0..G-1
    num_groups: int


def _dense_groups(group_ids: Tensor) -> _GroupIndex:
    """Map arbitrary integer group ids [B] to dense 0..G-1 indices."""
    if group_ids.numel() == 0:
        return _GroupIndex(group_ids.long(), 0)
    uniq, inverse = torch.unique(group_ids, return_inverse=True)
    return _GroupIndex(inverse, int(uniq.numel()))


def _segment_mean_std(x: Tensor, seg: Tensor, num_segments: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per-segment count, mean and unbiased std of ``x`` (all entries of x count).

    Args:
        x: float [N]; seg: long [N] in [0, num_segments).
    Returns:
        count [S], mean [S], std [S] (std is 0 for segments with fewer than two entries).
    """
    count = torch.zeros(num_segments, dtype=x.dtype, device=x.device).index_add_(0, seg, torch.ones_like(x))
    total = torch.zeros(num_segments, dtype=x.dtype, device=x.device).index_add_(0, seg, x)
    mean = total / count.clamp(min=1)
    dev = x - mean[seg]
    ss = torch.zeros(num_segments, dtype=x.dtype, device=x.device).index_add_(0, seg, dev * dev)
    std = (ss / (count - 1).clamp(min=1)).sqrt()
    return count, mean, std


@torch.no_grad()
def grpo_advantages(scores: Tensor, group_ids: Tensor, valid: Tensor, eps: float = GRPO_EPS) -> Tensor:
    """Group-relative advantage: (S - mean_g) / (std_g + eps) over the valid siblings.

    Statistics of a group use its valid members only; std is unbiased (n - 1), as in
    ``torch.std`` used by common GRPO implementations. Invalid trajectories get 0, and so does
    a group with a single valid member (nothing to compare against).

    Args:
        scores: float [B] trajectory scores S.
        group_ids: long [B] task group of each trajectory (any integers).
        valid: bool [B].
        eps: docs/design.md §5d: 1e-6.
    Returns:
        float [B] advantages.
    """
    valid = valid.bool()
    dtype = scores.dtype if scores.is_floating_point() else torch.get_default_dtype()
    out = torch.zeros(scores.shape, dtype=dtype, device=scores.device)
    if not bool(valid.any()):
        return out
    s = scores[valid].to(dtype)
    groups = _dense_groups(group_ids[valid])
    count, mean, std = _segment_mean_std(s, groups.inverse, groups.num_groups)
    adv = (s - mean[groups.inverse]) / (std[groups.inverse] + eps)
    adv = torch.where(count[groups.inverse] > 1, adv, torch.zeros((), dtype=dtype, device=s.device))
    out[valid] = adv
    return out


@torch.no_grad()
def trajectory_scores(step_rewards: Tensor, terminal_rewards: Tensor, step_mask: Tensor) -> Tensor:
    """GRPO score S = undiscounted sum of the dense rewards on real steps + terminal reward.

    Args:
        step_rewards: float [B, T]; terminal_rewards: float [B]; step_mask: bool [B, T].
    Returns:
        float [B].
    """
    zero = torch.zeros((), dtype=step_rewards.dtype, device=step_rewards.device)
    return torch.where(step_mask.bool(), step_rewards, zero).sum(-1) + terminal_rewards.to(step_rewards.dtype)


@torch.no_grad()
def gigpo_step_advantages(
    returns: Tensor, state_keys: Tensor, group_ids: Tensor, step_mask: Tensor
) -> Tensor:
    """GiGPO anchor-state step advantage: A_step = G_t - mean of G over its anchor group.

    An anchor group is every real step, across the sibling trajectories of one task group,
    whose state key is identical (same screenshot hash and same UI text, see
    :func:`build_state_keys`). Several visits of the same state within one trajectory all
    join the group. A step alone in its anchor group, or with a negative key, gets 0.

    Args:
        returns: float [B, T] G_t (from :func:`discounted_returns`).
        state_keys: long [B, T] state ids (only equality matters); negative = no key.
        group_ids: long [B] task group of each trajectory.
        step_mask: bool [B, T] steps that count (real steps of valid trajectories).
    Returns:
        float [B, T], 0 where ``step_mask`` is False.
    """
    mask = step_mask.bool() & (state_keys >= 0)
    out = torch.zeros(returns.shape, dtype=returns.dtype, device=returns.device)
    if not bool(mask.any()):
        return out
    b_idx, t_idx = mask.nonzero(as_tuple=True)
    g = returns[b_idx, t_idx]
    # Anchor key = (task group, state key); unique over rows so large ids cannot collide.
    key = torch.stack([group_ids[b_idx].long(), state_keys[b_idx, t_idx].long()], dim=1)
    _, anchor = torch.unique(key, dim=0, return_inverse=True)
    n_anchor = int(anchor.max().item()) + 1
    count, mean, _ = _segment_mean_std(g, anchor, n_anchor)
    a = torch.where(count[anchor] > 1, g - mean[anchor], torch.zeros((), dtype=g.dtype, device=g.device))
    out[b_idx, t_idx] = a
    return out


def build_state_keys(
    per_trajectory_keys: Sequence[Sequence[Hashable]], num_steps: int | None = None
) -> Tensor:
    """Dense integer ids for hashable per-step state keys, -1 on padding.

    Use e.g. ``(phash64(screenshot), ui_text)`` tuples as keys: GiGPO groups steps whose key
    is identical. Ids are assigned in first-seen order over (trajectory, step).

    Args:
        per_trajectory_keys: B sequences of per-step keys (ragged).
        num_steps: T of the padded batch (default: the longest trajectory).
    Returns:
        long [B, T].
    """
    longest = max((len(k) for k in per_trajectory_keys), default=0)
    T = longest if num_steps is None else num_steps
    if longest > T:
        raise ValueError(f"a trajectory has {longest} steps but num_steps={T}")
    ids: dict[Hashable, int] = {}
    out = torch.full((len(per_trajectory_keys), T), -1, dtype=torch.long)
    for b, keys in enumerate(per_trajectory_keys):
        for t, key in enumerate(keys):
            out[b, t] = ids.setdefault(key, len(ids))
    return out


# --------------------------------------------------------------------------------------
# uniform estimator interface and registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AdvantageInputs:
    """Everything an estimator may need; shapes as in the module docstring.

    Attributes:
        step_rewards: float [B, T] dense rewards.
        terminal_rewards: float [B] terminal rewards.
        step_mask: bool [B, T] real steps.
        valid: bool [B] trajectory validity (False = masked infrastructure failure).
        group_ids: long [B] task group ids (siblings share one).
        gamma: discount of the dense rewards.
        values: float [B, T] critic values V(s_t); required by ppo, ppo_terminal_only, gigppo.
        state_keys: long [B, T] state ids, -1 on padding; required by gigpo.
        gigpo_step_weight: w in A = A_episode + w * A_step (gigpo).
        whiten: whiten the G - V advantages of the ppo family (docs/design.md §5e default: True).
    """

    step_rewards: Tensor
    terminal_rewards: Tensor
    step_mask: Tensor
    valid: Tensor
    group_ids: Tensor
    gamma: float
    values: Tensor | None = None
    state_keys: Tensor | None = None
    gigpo_step_weight: float = 1.0
    whiten: bool = True

    def __post_init__(self) -> None:
        B, T = self.step_rewards.shape
        checks = {
            "terminal_rewards": (self.terminal_rewards, (B,)),
            "step_mask": (self.step_mask, (B, T)),
            "valid": (self.valid, (B,)),
            "group_ids": (self.group_ids, (B,)),
            "values": (self.values, (B, T)),
            "state_keys": (self.state_keys, (B, T)),
        }
        for name, (tensor, shape) in checks.items():
            if tensor is not None and tuple(tensor.shape) != shape:
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {shape}")
        if not 0.0 <= float(self.gamma) <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")

    @property
    def mask(self) -> Tensor:
        """bool [B, T]: real steps of valid trajectories."""
        return effective_step_mask(self.step_mask, self.valid)


@dataclass(frozen=True)
class AdvantageOutputs:
    """Result of an estimator.

    Attributes:
        advantages: float [B, T] per-step advantage A_t (every output token of step t carries
            it); 0 on padding and in invalid trajectories.
        returns: float [B, T] discounted returns G_t used as critic targets; 0 likewise.
    """

    advantages: Tensor
    returns: Tensor


EstimatorFn = Callable[[AdvantageInputs], AdvantageOutputs]

CriticKind = Literal["value", "gigppo"]
CRITIC_KINDS: tuple[str, ...] = get_args(CriticKind)
"""Critics the trainer can run (:class:`navrl.rl.critic.CriticAdapter`): ``"value"`` is V(s)
from the planner's state; ``"gigppo"`` also reads the nearest sibling state (needs hashes)."""


class DuplicateEstimatorError(ValueError):
    """An estimator name was registered twice."""


class UnknownEstimatorError(KeyError):
    """No estimator is registered under that name."""


@dataclass(frozen=True)
class EstimatorSpec:
    """One registry entry: the estimator function and what the trainer must provide for it.

    Attributes:
        name: the name used in configs and on the command line (``--estimator NAME``).
        fn: ``fn(inputs: AdvantageInputs) -> AdvantageOutputs``, pure, run under no_grad.
        critic: the critic whose values V [B, T] arrive as ``inputs.values`` (one of
            :data:`CRITIC_KINDS`), or None for a critic-free estimator (``inputs.values`` is
            None, no critic warm-up, no critic updates).
        needs_state_hashes: the rollouts record 64-bit perceptual screenshot hashes (GiGPO's
            identical-state groups, the GiGPPO critic's nearest sibling).
        min_rollouts_per_task: smallest ``TrainConfig.rollout.rollouts_per_task`` that makes sense
            (2 for estimators that compare sibling rollouts).
        doc: the function's docstring.
    """

    name: str
    fn: EstimatorFn
    critic: CriticKind | None = None
    needs_state_hashes: bool = False
    min_rollouts_per_task: int = 1
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"estimator name must be a non-empty string without spaces, got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(f"estimator {self.name!r}: fn must be callable, got {self.fn!r}")
        if self.critic is not None and self.critic not in CRITIC_KINDS:
            raise ValueError(f"estimator {self.name!r}: critic must be one of {CRITIC_KINDS} or None, "
                             f"got {self.critic!r}")
        if self.critic == "gigppo" and not self.needs_state_hashes:
            raise ValueError(f"estimator {self.name!r}: the gigppo critic pairs states by screenshot hash; "
                             "declare needs_state_hashes=True")
        mr = self.min_rollouts_per_task
        if isinstance(mr, bool) or not isinstance(mr, int) or mr < 1:
            raise ValueError(f"estimator {self.name!r}: min_rollouts_per_task must be an int >= 1, got {mr!r}")

    @property
    def uses_critic(self) -> bool:
        """True when the advantage reads critic values (the trainer runs and trains a critic)."""
        return self.critic is not None


_REGISTRY: dict[str, EstimatorSpec] = {}


def _key(name: str | AdvantageEstimator) -> str:
    return name.value if isinstance(name, AdvantageEstimator) else str(name)


def register_estimator(
    name: str | AdvantageEstimator,
    *,
    critic: CriticKind | None = None,
    needs_state_hashes: bool = False,
    min_rollouts_per_task: int = 1,
) -> Callable[[EstimatorFn], EstimatorFn]:
    """Decorator: register ``fn(inputs: AdvantageInputs) -> AdvantageOutputs`` under ``name``.

    This is the only list of estimators: the trainer, ``TrainConfig.validate`` and
    ``navrl train --estimator`` read it. ``fn`` is returned unchanged; it receives the batch of
    :class:`AdvantageInputs` (shapes in the module docstring) and returns advantages [B, T] and
    critic-target returns [B, T], both 0 on padding and in invalid trajectories. It runs under
    ``torch.no_grad`` when dispatched by :func:`compute_advantages`; its docstring becomes
    :attr:`EstimatorSpec.doc`. Example (all-zero advantages, no critic)::

        @register_estimator("zero", critic=None, min_rollouts_per_task=1)
        def zero(inputs: AdvantageInputs) -> AdvantageOutputs:
            G = discounted_returns(inputs.step_rewards, inputs.terminal_rewards, inputs.mask, inputs.gamma)
            return AdvantageOutputs(advantages=torch.zeros_like(G), returns=G)

    Args:
        name: the name for configs and ``--estimator`` (built-ins use :class:`AdvantageEstimator`).
        critic: critic kind whose values arrive as ``inputs.values`` (see :data:`CRITIC_KINDS`),
            or None for a critic-free estimator.
        needs_state_hashes: rollouts must record screenshot perceptual hashes.
        min_rollouts_per_task: smallest sibling-group size the estimator accepts.
    Raises:
        DuplicateEstimatorError: ``name`` is already registered.
        ValueError: an invalid name, critic kind or minimum (at decoration time).
    """
    key = _key(name)

    def decorator(fn: EstimatorFn) -> EstimatorFn:
        if key in _REGISTRY:
            raise DuplicateEstimatorError(f"advantage estimator {key!r} is already registered")
        _REGISTRY[key] = EstimatorSpec(key, fn, critic=critic, needs_state_hashes=needs_state_hashes,
                                       min_rollouts_per_task=min_rollouts_per_task, doc=inspect.getdoc(fn) or "")
        return fn

    return decorator


def unregister_estimator(name: str | AdvantageEstimator) -> EstimatorSpec:
    """Remove ``name`` from the registry (tests, notebooks) and return its spec.

    Raises:
        UnknownEstimatorError: nothing registered under ``name``.
    """
    spec = estimator_spec(name)
    del _REGISTRY[spec.name]
    return spec


def estimator_spec(name: str | AdvantageEstimator) -> EstimatorSpec:
    """The registry entry of ``name``.

    Raises:
        UnknownEstimatorError: nothing registered under ``name``.
    """
    key = _key(name)
    try:
        return _REGISTRY[key]
    except KeyError:
        raise UnknownEstimatorError(
            f"unknown advantage estimator {key!r}; registered: {sorted(_REGISTRY)}"
        ) from None


def get_estimator(name: str | AdvantageEstimator) -> EstimatorFn:
    """The estimator function registered under ``name``.

    Raises:
        UnknownEstimatorError: nothing registered under ``name``.
    """
    return estimator_spec(name).fn


def estimator_needs_values(name: str | AdvantageEstimator) -> bool:
    """True if the estimator reads critic values (so the trainer must run a critic)."""
    return estimator_spec(name).uses_critic


def registered_estimators() -> list[str]:
    """Names of all registered estimators, sorted."""
    return sorted(_REGISTRY)


@torch.no_grad()
def compute_advantages(name: str | AdvantageEstimator, inputs: AdvantageInputs) -> AdvantageOutputs:
    """Run the estimator registered under ``name`` on ``inputs`` (the trainer's only dispatch)."""
    spec = estimator_spec(name)
    if spec.uses_critic and inputs.values is None:
        raise ValueError(f"advantage estimator {spec.name!r} needs critic values (inputs.values is None)")
    return spec.fn(inputs)


# --------------------------------------------------------------------------------------
# built-in estimators
# --------------------------------------------------------------------------------------


def _g_minus_v(inputs: AdvantageInputs, step_rewards: Tensor) -> AdvantageOutputs:
    """lambda = 1: A_t = G_t - V(s_t), optionally whitened over the valid steps."""
    assert inputs.values is not None  # checked by compute_advantages
    mask = inputs.mask
    G = discounted_returns(step_rewards, inputs.terminal_rewards, mask, inputs.gamma)
    zero = torch.zeros((), dtype=G.dtype, device=G.device)
    adv = torch.where(mask, G - inputs.values.to(G.dtype), zero)
    if inputs.whiten:
        adv = masked_whiten(adv, mask)
    return AdvantageOutputs(advantages=adv, returns=G)


@register_estimator(AdvantageEstimator.PPO, critic="value")
@torch.no_grad()
def ppo_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """PPO with dense + terminal rewards: A = whiten(G - V) over valid steps."""
    return _g_minus_v(inputs, inputs.step_rewards)


@register_estimator(AdvantageEstimator.PPO_TERMINAL_ONLY, critic="value")
@torch.no_grad()
def ppo_terminal_only_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """Terminal-only PPO baseline: as ``ppo`` with every dense reward set to 0."""
    return _g_minus_v(inputs, torch.zeros_like(inputs.step_rewards))


@register_estimator(AdvantageEstimator.GIGPPO, critic="gigppo", needs_state_hashes=True)
@torch.no_grad()
def gigppo_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """GiGPPO: the ``ppo`` formula; what differs is the critic producing V (navrl.rl.gigppo)."""
    return _g_minus_v(inputs, inputs.step_rewards)


def _episode_advantage(inputs: AdvantageInputs) -> tuple[Tensor, Tensor]:
    """GRPO advantage broadcast to steps: returns (A_episode [B, T], mask [B, T])."""
    mask = inputs.mask
    scores = trajectory_scores(inputs.step_rewards, inputs.terminal_rewards, mask)
    a = grpo_advantages(scores, inputs.group_ids, inputs.valid)
    zero = torch.zeros((), dtype=a.dtype, device=a.device)
    return torch.where(mask, a.unsqueeze(-1), zero), mask


@register_estimator(AdvantageEstimator.GRPO, min_rollouts_per_task=2)
@torch.no_grad()
def grpo_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """GRPO baseline: S = sum of rewards, group-relative advantage on every valid step."""
    adv, mask = _episode_advantage(inputs)
    G = discounted_returns(inputs.step_rewards, inputs.terminal_rewards, mask, inputs.gamma)
    return AdvantageOutputs(advantages=adv.to(G.dtype), returns=G)


@register_estimator(AdvantageEstimator.GIGPO, needs_state_hashes=True, min_rollouts_per_task=2)
@torch.no_grad()
def gigpo_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """GiGPO baseline: A = A_episode + w * A_step (identical-state anchor groups)."""
    if inputs.state_keys is None:
        raise ValueError("advantage estimator 'gigpo' needs inputs.state_keys")
    adv_ep, mask = _episode_advantage(inputs)
    G = discounted_returns(inputs.step_rewards, inputs.terminal_rewards, mask, inputs.gamma)
    adv_step = gigpo_step_advantages(G, inputs.state_keys, inputs.group_ids, mask)
    adv = adv_ep.to(G.dtype) + float(inputs.gigpo_step_weight) * adv_step
    zero = torch.zeros((), dtype=G.dtype, device=G.device)
    return AdvantageOutputs(advantages=torch.where(mask, adv, zero), returns=G)


# ---------------------------------------------------------------- anchored credit (issue 26)
# GiGPO's A = A_episode + w * A_step gives every step of an episode the episode's group-relative
# advantage: when one early decision fails most episodes of a group, the correct decisions after
# it (``Tap "Send"``, ``Complete``) share the failed episodes' negative advantage and RL unlearns
# the end of the task (docs/results/exploration.md: without PPO-ptx the last step falls from
# 38/48 to 21/48). ``gigpo_anchored`` credits a step whose state (task group, state key) other
# sibling steps share by that anchor group's comparison only, (G - mean) / (std + 1e-6), 0 when
# they all fared alike whatever the episode's fate; a step alone in its state keeps the episode
# advantage.
GIGPO_ANCHORED = "gigpo_anchored"
"""Registry name of the anchored-credit estimator (not one of :class:`AdvantageEstimator`'s built-ins)."""


@torch.no_grad()
def anchored_step_advantages(returns: Tensor, state_keys: Tensor, group_ids: Tensor,
                             step_mask: Tensor) -> tuple[Tensor, Tensor]:
    """(A [B, T], anchored [B, T] bool): the normalised anchor-group advantage of every step whose
    anchor group has more than one member, and which steps have one."""
    mask = step_mask.bool() & (state_keys >= 0)
    out = torch.zeros(returns.shape, dtype=returns.dtype)
    anchored = torch.zeros(returns.shape, dtype=torch.bool)
    if not bool(mask.any()):
        return out, anchored
    b, t = mask.nonzero(as_tuple=True)
    g = returns[b, t]
    key = torch.stack([group_ids[b].long(), state_keys[b, t].long()], dim=1)
    _, anchor = torch.unique(key, dim=0, return_inverse=True)
    count, mean, std = _segment_mean_std(g, anchor, int(anchor.max()) + 1)
    multi = count[anchor] > 1
    out[b, t] = torch.where(multi, (g - mean[anchor]) / (std[anchor] + 1e-6), torch.zeros_like(g))
    anchored[b, t] = multi
    return out, anchored


@register_estimator(GIGPO_ANCHORED, needs_state_hashes=True, min_rollouts_per_task=2)
@torch.no_grad()
def gigpo_anchored_estimator(inputs: AdvantageInputs) -> AdvantageOutputs:
    """A = the anchor group's normalised comparison where a step has one, else the episode's
    group-relative advantage."""
    if inputs.state_keys is None:
        raise ValueError(f"advantage estimator {GIGPO_ANCHORED!r} needs inputs.state_keys")
    adv_ep, mask = _episode_advantage(inputs)
    G = discounted_returns(inputs.step_rewards, inputs.terminal_rewards, mask, inputs.gamma)
    a_step, anchored = anchored_step_advantages(G, inputs.state_keys, inputs.group_ids, mask)
    adv = torch.where(anchored, a_step, adv_ep.to(G.dtype))
    return AdvantageOutputs(advantages=torch.where(mask, adv, torch.zeros((), dtype=G.dtype)), returns=G)


# ---------------------------------------------------------------- unanimous failures (issue 26)
# A group-relative estimator says nothing about a step's own choice when the judge failed every
# sibling step at that state: its comparison is 0 (all fared alike) or measures only what happened
# after the failed steps (luck). After RL learnt `Go home` at the end of a first app, all
# rollouts apply it inside the second app too (p 0.999), the step judge fails every one of them,
# and nothing ever pushes back (docs/results/exploration.md §9). Negative sample reinforcement
# (Zhu et al. 2025, "The Surprising Effectiveness of Negative Reinforcement in LLM Reasoning")
# lowers only what was judged wrong; the freed probability goes to the other choices in proportion
# to what the policy already believes, so later rollouts try the runner-up there.
NO_CREDIT_EPS = 1e-6
"""An advantage this close to 0 counts as "no credit" (an all-alike comparison gives 0 up to float rounding)."""


@torch.no_grad()
def unanimous_anchor_steps(state_keys: Tensor, group_ids: Tensor, step_failed: Tensor, step_mask: Tensor) -> Tensor:
    """bool [B, T]: real steps whose anchor group (task group, state key) has more than one member
    and whose members' steps the judge all failed (whatever each chose): comparing their returns
    then measures only what happened after the failed step."""
    mask = step_mask.bool() & (state_keys >= 0)
    out = torch.zeros(state_keys.shape, dtype=torch.bool)
    if not bool(mask.any()):
        return out
    b, t = mask.nonzero(as_tuple=True)
    key = torch.stack([group_ids[b].long(), state_keys[b, t].long()], dim=1)
    _, anchor = torch.unique(key, dim=0, return_inverse=True)
    n = int(anchor.max()) + 1
    count = torch.bincount(anchor, minlength=n)
    failed = torch.bincount(anchor, weights=step_failed[b, t].double(), minlength=n)
    out[b, t] = (count[anchor] > 1) & (failed[anchor] == count[anchor].double())
    return out


@torch.no_grad()
def unanimous_failure_credit(advantages: Tensor, step_failed: Tensor, step_mask: Tensor, penalty: float,
                             unanimous: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(A' [B, T], credited [B, T] bool): ``-penalty`` on every real step that the step judge failed
    and whose credit says nothing about its choice — the estimator gave it none (|A| <=
    NO_CREDIT_EPS), or the judge failed every sibling step at its state too (``unanimous``, from
    :func:`unanimous_anchor_steps`); every other entry unchanged.

    advantages: float [B, T] from an estimator; step_failed: bool [B, T] (``Batch.step_failed``);
    step_mask: bool [B, T] real steps of valid trajectories (masked steps are never touched);
    penalty: >= 0, in the estimator's units (group-normalised advantages: ~1 is one std);
    unanimous: bool [B, T] or None (only the no-credit rule).
    """
    if penalty < 0:
        raise ValueError(f"penalty must be >= 0, got {penalty}")
    no_say = advantages.abs() <= NO_CREDIT_EPS
    if unanimous is not None:
        no_say = no_say | unanimous.bool()
    credited = step_mask.bool() & step_failed.bool() & no_say
    if penalty == 0:
        credited = torch.zeros_like(credited)
    out = torch.where(credited, torch.full((), -float(penalty), dtype=advantages.dtype), advantages)
    return out, credited
