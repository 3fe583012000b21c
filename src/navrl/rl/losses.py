"""The policy loss as a registry of pure terms, the critic loss, KL and entropy (docs/design.md §5b).

Token layout: one row per generated planner output (one step of one trajectory), L tokens:

* ``logp``, ``old_logp``, ``ref_logp``  float [N, L] log-probabilities of the sampled tokens
* ``mask``                              bool  [N, L] output tokens (not prompt, not padding)
* ``valid``                             bool  [N]    row belongs to a valid trajectory (optional)

Every token of a row carries the advantage of its step, so advantages may be [N] or [N, L].
Aggregation is a token-mean over all valid tokens of the (mini)batch. Rows of invalid
trajectories and masked tokens are excluded with ``torch.where`` on the inputs, so they add
nothing to the loss, the gradient or the statistics, even when they hold inf or NaN.

The policy loss of one optimiser step is a weighted sum of **terms**, each a pure function
``fn(inputs: LossInputs) -> Tensor`` (a scalar) registered with :func:`register_loss` — the
registry is the only list of them, as :func:`navrl.rl.advantages.register_estimator`'s is of
the advantage estimators. ``TrainConfig.policy.loss_terms`` names the terms in the order they are
summed; each is weighted by the config field its spec names (``coef``): the trainer adds
``coef × term`` for every term whose coefficient is not 0 (``-coef × term`` for a bonus,
``maximise=True``). Built-in terms:

=================  ==============================  ================================================
term               coefficient                     value (a token mean over the valid tokens)
=================  ==============================  ================================================
``ppo_clip``       1                               clipped PPO surrogate (:func:`ppo_clip`)
``kl_ref``         ``policy.kl_coef``              k3 KL to the reference planner (:func:`kl_ref`)
``entropy``        ``policy.entropy_coef``         entropy, a bonus: subtracted (:func:`entropy_bonus`)
``ptx``            ``policy.sft_coef``             NLL of SFT demonstrations, PPO-ptx (:func:`ptx`)
``self_imitation`` ``exploration.self_imitation``  NLL of the planner's own rewarded outputs
``factor_entropy`` ``exploration.entropy_control`` adaptive per-factor entropy, a bonus (:func:`factor_entropy_bonus`)
=================  ==============================  ================================================
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import ClassVar, Literal, get_args

import torch
from torch import Tensor

from navrl.rl.config import ConfigError

__all__ = [
    "PolicyLossOutput",
    "CriticLossOutput",
    "LossInputs",
    "LossSpec",
    "LossSource",
    "UnknownLossError",
    "DuplicateLossError",
    "register_loss",
    "unregister_loss",
    "loss_spec",
    "registered_losses",
    "token_mask",
    "masked_token_mean",
    "kl_k3",
    "entropy_from_logits",
    "ppo_clip",
    "kl_ref",
    "entropy_bonus",
    "ptx",
    "self_imitation",
    "factor_entropy_bonus",
    "sample_stats",
    "ppo_policy_loss",
    "critic_loss",
]


def token_mask(mask: Tensor, valid: Tensor | None = None) -> Tensor:
    """bool [N, L]: ``mask`` with the rows of invalid trajectories removed (``valid`` [N])."""
    m = mask.bool()
    if valid is not None:
        m = m & valid.bool().view(-1, *([1] * (m.dim() - 1)))
    return m


def masked_token_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``x`` over True entries of ``mask`` (0 if none); differentiable. Scalar."""
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    return torch.where(mask, x, zero).sum() / mask.sum().clamp(min=1).to(x.dtype)


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimator of KL(pi || ref) on tokens sampled from pi.

    With log r = ref_logp - logp: k3 = (r - 1) - log r >= 0, unbiased, low variance (Schulman,
    "Approximating KL divergence"). Differentiable w.r.t. ``logp``.

    Args:
        logp, ref_logp: float [N, L].
    Returns:
        float [N, L].
    """
    log_r = ref_logp - logp
    return torch.expm1(log_r) - log_r


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of the categorical distribution per position. float [N, L, V] -> [N, L]."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


class _LoggedFields:
    """``stats()``: every field as a Python float, keyed ``{_prefix}/{name}`` in field order."""

    _prefix: ClassVar[str]
    _renamed: ClassVar[dict[str, str]] = {}
    """Fields logged under another name."""

    def stats(self) -> dict[str, float]:
        """Python floats for logging."""
        def num(v: Tensor | int) -> float:
            return float(v.detach() if isinstance(v, Tensor) else v)
        return {f"{self._prefix}/{self._renamed.get(f.name, f.name)}": num(getattr(self, f.name))
                for f in fields(self)}  # type: ignore[arg-type]


@dataclass
class PolicyLossOutput(_LoggedFields):
    """Result of :func:`ppo_policy_loss`.

    Attributes:
        loss: scalar to minimise = pg_loss + kl_coef * kl - entropy_coef * entropy.
        pg_loss: clipped surrogate, token-mean over valid tokens.
        kl: token-mean k3 KL to the reference policy (0 if no reference given).
        entropy: token-mean entropy (0 if none given).
        clip_fraction: share of valid tokens where the clipped branch is the active one.
        approx_kl: token-mean k3 estimate of KL(old || new) = mean((r - 1) - log r), r = pi/pi_old.
        ratio_mean: token-mean probability ratio r (1 right after a rollout).
        num_tokens: number of valid tokens.
    """

    _prefix = "policy"
    _renamed = {"kl": "kl_ref"}

    loss: Tensor
    pg_loss: Tensor
    kl: Tensor
    entropy: Tensor
    clip_fraction: Tensor
    approx_kl: Tensor
    ratio_mean: Tensor
    num_tokens: int


# ===================================================================== the policy loss's terms
LossSource = Literal["samples", "entropy", "reference", "demos", "own"]
"""What a term reads (:attr:`LossSpec.reads`); the trainer scores each source once per step,
when the first term that reads it comes:

* ``samples``: the minibatch's sampled outputs re-scored by the policy (``logp``, ``old_logp``,
  ``advantages``, ``mask``; absent when every sample of the minibatch was left out);
* ``entropy``: their per-token ``entropy`` too (a text policy computes it only when asked);
* ``reference``: their log-probs under the frozen reference planner (``ref_logp``);
* ``demos``: PPO-ptx's SFT demonstrations scored at temperature 1 (``demo_logp``, ``demo_mask``);
* ``own``: the self-imitation buffer's items scored at temperature 1 (``own_logp``, ``own_mask``;
  absent while the buffer is empty)."""


@dataclass(frozen=True)
class LossInputs:
    """What the policy loss's terms of one optimiser step read; a source the step lacks is None.

    N sampled outputs (rows) of L tokens, M demonstrations of Ld tokens, K self-imitation items
    of Lo tokens; log-probs carry the gradient, everything else is read as a constant.

    Attributes:
        logp: float [N, L] log-probs of the sampled tokens under the policy, at the rollout
            temperature (0 on padding).
        old_logp: float [N, L] the same tokens' log-probs recorded at rollout time (the behaviour
            policy's, or the planner's own where exploration mixed: ``policy.off_policy_ratio``).
        is_weight: float [N, L] per-token importance weights of the clipped surrogate (decoupled
            PPO's min(cap, pi_old / mu)), read as a constant; None: 1.
        advantages: float [N] (one per step, broadcast to its tokens) or [N, L].
        mask: bool [N, L] output tokens.
        valid: bool [N] rows of valid trajectories, or None (every row counts).
        entropy: float [N, L] per-token entropy of the policy (source ``entropy``).
        entropy_weight: float [N, L] the adaptive weight of each position's decision factor
            (source ``entropy``, with ``exploration.entropy_control``: :mod:`navrl.rl.entropy_control`).
        ref_logp: float [N, L] the reference planner's log-probs (source ``reference``).
        clip_eps: PPO's ratio clip range.
        demo_logp: float [M, Ld] log-probs of the demonstrations' targets (source ``demos``).
        demo_mask: bool [M, Ld] their output tokens (or decision factors).
        own_logp: float [K, Lo] log-probs of the buffered outputs (source ``own``).
        own_mask: bool [K, Lo] their output tokens.
    """

    logp: Tensor | None = None
    old_logp: Tensor | None = None
    is_weight: Tensor | None = None
    advantages: Tensor | None = None
    mask: Tensor | None = None
    valid: Tensor | None = None
    entropy: Tensor | None = None
    entropy_weight: Tensor | None = None
    ref_logp: Tensor | None = None
    clip_eps: float = 0.2
    demo_logp: Tensor | None = None
    demo_mask: Tensor | None = None
    own_logp: Tensor | None = None
    own_mask: Tensor | None = None


LossFn = Callable[[LossInputs], Tensor]


@dataclass(frozen=True)
class LossSpec:
    """One registry entry: a policy-loss term and how the trainer weighs and feeds it.

    Attributes:
        name: the name in ``TrainConfig.policy.loss_terms``.
        fn: ``fn(inputs: LossInputs) -> Tensor``, a pure function to a scalar with grad.
        coef: the ``TrainConfig`` field holding its coefficient, by dotted name
            (``policy.kl_coef``; the term is left out while it is 0), or None for a fixed
            coefficient of 1.
        maximise: a bonus: the loss adds ``-coef × term``.
        reads: the :data:`LossSource` s it reads; a step that lacks one leaves the term out.
        zero_advantage_free: a sample whose advantage is 0 adds exactly nothing to the term or
            its gradient, so the trainer may leave such samples out of the forward pass (and
            rescale the token mean) while every term in use says so.
        log: the metrics key of the term's value (each step's value, averaged over the steps
            that had it), or None.
        doc: the function's docstring.
    """

    name: str
    fn: LossFn
    coef: str | None = None
    maximise: bool = False
    reads: tuple[LossSource, ...] = ("samples",)
    zero_advantage_free: bool = True
    log: str | None = None
    doc: str = ""

    @property
    def reads_samples(self) -> bool:
        """True for a token mean over the sampled outputs (rescaled when samples are left out)."""
        return "samples" in self.reads


class UnknownLossError(ConfigError):
    """A loss term name that nothing is registered under."""


class DuplicateLossError(ValueError):
    """A loss term name was registered twice."""


_LOSSES: dict[str, LossSpec] = {}


def register_loss(name: str, *, coef: str | None = None, maximise: bool = False,
                  reads: tuple[LossSource, ...] = ("samples",), zero_advantage_free: bool = True,
                  log: str | None = None) -> Callable[[LossFn], LossFn]:
    """Decorator: register ``fn(inputs: LossInputs) -> Tensor`` as the policy-loss term ``name``.

    This is the only list of terms: ``TrainConfig.policy.loss_terms`` names them, ``TrainConfig.validate``
    and the trainer read their specs. ``fn`` is returned unchanged; it must be pure (no state, no
    draws), read only the sources in ``reads`` and return a scalar. Example (an L2 pull of
    the sampled tokens' log-probs towards their rollout values, weight 1)::

        @register_loss("logp_l2")
        def logp_l2(x: LossInputs) -> Tensor:
            m = token_mask(x.mask, x.valid)
            return masked_token_mean((x.logp - x.old_logp.detach()) ** 2, m)

    Raises:
        DuplicateLossError: ``name`` is already registered.
        ValueError: an unknown source in ``reads`` (at decoration time).
    """
    bad = [r for r in reads if r not in get_args(LossSource)]
    if bad or not reads:
        raise ValueError(f"loss term {name!r}: reads must name sources from {get_args(LossSource)}, got {reads!r}")
    if {"entropy", "reference"} & set(reads) and "samples" not in reads:
        reads = ("samples", *reads)      # (both are of the sampled outputs)

    def decorator(fn: LossFn) -> LossFn:
        if name in _LOSSES:
            raise DuplicateLossError(f"loss term {name!r} is already registered")
        _LOSSES[name] = LossSpec(name, fn, coef=coef, maximise=maximise, reads=tuple(reads),
                                 zero_advantage_free=zero_advantage_free, log=log, doc=inspect.getdoc(fn) or "")
        return fn
    return decorator


def unregister_loss(name: str) -> LossSpec:
    """Remove ``name`` from the registry (tests, notebooks) and return its spec."""
    spec = loss_spec(name)
    del _LOSSES[name]
    return spec


def loss_spec(name: str) -> LossSpec:
    """The registry entry of ``name``.

    Raises:
        UnknownLossError: (a :class:`ConfigError`) nothing registered under ``name``.
    """
    try:
        return _LOSSES[name]
    except (KeyError, TypeError):
        raise UnknownLossError(f"unknown loss term {name!r}; registered: {registered_losses()} (register one "
                               "with navrl.rl.losses.register_loss, e.g. in a module given to "
                               "navrl train --plugin)") from None


def registered_losses() -> list[str]:
    """Names of all registered loss terms, sorted."""
    return sorted(_LOSSES)


def _zero(like: Tensor) -> Tensor:
    return torch.zeros((), dtype=like.dtype, device=like.device)


def _ratios(x: LossInputs) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(valid-token mask bool [N, L], advantages [N, L] 0 off it, log-ratio [N, L] 0 off it,
    ratio r = exp(log-ratio) [N, L]) of the sampled tokens."""
    m = token_mask(x.mask, x.valid)
    zero = _zero(x.logp)
    advantages = x.advantages
    if advantages.dim() == x.logp.dim() - 1:
        advantages = advantages.unsqueeze(-1)
    adv = torch.where(m, advantages.to(x.logp.dtype).detach().expand_as(x.logp), zero)
    # Mask the log-ratio itself (not the product): padding may hold -inf log-probs.
    log_ratio = torch.where(m, x.logp - x.old_logp.detach(), zero)
    return m, adv, log_ratio, torch.exp(log_ratio)


@register_loss("ppo_clip", log="policy/pg_loss")
def ppo_clip(x: LossInputs) -> Tensor:
    """Clipped PPO surrogate with per-token ratio r = exp(logp - old_logp):
    token-mean over valid tokens of w max(-A r, -A clip(r, 1 - eps, 1 + eps)), eps = ``clip_eps``
    (``policy.clip_eps``), w the token's importance weight ``is_weight`` (1 when None: decoupled
    PPO's weight, ``policy.off_policy_ratio``).

    Reads ``logp``, ``old_logp`` [N, L], ``is_weight`` [N, L] or None, ``advantages`` [N] or
    [N, L], ``mask`` [N, L], ``valid`` [N]. Returns a scalar; a zero-advantage row adds nothing
    to it or its gradient."""
    m, adv, _, ratio = _ratios(x)
    surr = -adv * ratio
    surr_clipped = -adv * torch.clamp(ratio, 1.0 - x.clip_eps, 1.0 + x.clip_eps)
    tok = torch.maximum(surr, surr_clipped)
    if x.is_weight is not None:   # masked before the product: junk off the mask must not reach the value
        tok = tok * torch.where(m, x.is_weight.detach().to(tok.dtype), torch.ones_like(tok))
    return masked_token_mean(tok, m)


@register_loss("kl_ref", coef="policy.kl_coef", reads=("samples", "reference"), zero_advantage_free=False,
               log="policy/kl_ref")
def kl_ref(x: LossInputs) -> Tensor:
    """Token-mean k3 estimate of KL(pi || ref) over the valid sampled tokens (:func:`kl_k3`),
    differentiable in ``logp``.

    Reads ``logp``, ``ref_logp`` [N, L], ``mask`` [N, L], ``valid`` [N]. Returns a scalar >= 0."""
    m = token_mask(x.mask, x.valid)
    zero = _zero(x.logp)
    # Mask both inputs (not only the output) so -inf on padding cannot make NaN gradients.
    return masked_token_mean(kl_k3(torch.where(m, x.logp, zero), torch.where(m, x.ref_logp.detach(), zero)), m)


@register_loss("entropy", coef="policy.entropy_coef", maximise=True, reads=("samples", "entropy"),
               zero_advantage_free=False, log="policy/entropy")
def entropy_bonus(x: LossInputs) -> Tensor:
    """Token-mean entropy of the policy at the valid sampled positions: a bonus (the loss
    subtracts ``policy.entropy_coef`` × it).

    Reads ``entropy`` [N, L], ``mask`` [N, L], ``valid`` [N]. Returns a scalar >= 0."""
    return masked_token_mean(x.entropy, token_mask(x.mask, x.valid))


@register_loss("factor_entropy", coef="exploration.entropy_control", maximise=True, reads=("samples", "entropy"),
               zero_advantage_free=False, log="policy/factor_entropy")
def factor_entropy_bonus(x: LossInputs) -> Tensor:
    """Adaptive per-factor entropy bonus: token mean over the valid sampled positions of
    ``entropy_weight`` × entropy, the weight being the controller's coefficient of the decision
    factor the position stands for (0 for a factor at or above its target); the loss subtracts
    ``exploration.entropy_control`` × it.

    Reads ``entropy``, ``entropy_weight`` [N, L], ``mask`` [N, L], ``valid`` [N]. Returns a scalar >= 0
    (0 when no ``entropy_weight`` is given)."""
    if x.entropy_weight is None:
        return _zero(x.entropy)
    m = token_mask(x.mask, x.valid)
    zero = _zero(x.entropy)
    # both masked before the product: junk off the mask must not reach the value or the gradient
    return masked_token_mean(torch.where(m, x.entropy, zero) * torch.where(m, x.entropy_weight.to(x.entropy.dtype), zero).detach(), m)


def _nll(logp: Tensor, mask: Tensor) -> Tensor:
    """Mean negative log-likelihood per output token: -(sum of logp over ``mask``) / its count."""
    return -masked_token_mean(logp, mask.bool())


@register_loss("ptx", coef="policy.sft_coef", reads=("demos",), log="policy/sft_loss")
def ptx(x: LossInputs) -> Tensor:
    """PPO-ptx (InstructGPT): mean negative log-likelihood per output token (or decision
    factor) of the SFT demonstrations, so the few tasks of one update cannot pull the planner
    away from everything SFT taught it.

    Reads ``demo_logp`` [M, Ld], ``demo_mask`` [M, Ld]. Returns a scalar >= 0."""
    return _nll(x.demo_logp, x.demo_mask)


@register_loss("self_imitation", coef="exploration.self_imitation", reads=("own",), log="policy/self_imitation_loss")
def self_imitation(x: LossInputs) -> Tensor:
    """Self-imitation (Oh et al., 2018; :mod:`navrl.rl.self_imitation`): mean negative
    log-likelihood per output token of the planner's own past outputs that earned a positive
    step reward and advantage, unclipped.

    Reads ``own_logp`` [K, Lo], ``own_mask`` [K, Lo]. Returns a scalar >= 0."""
    return _nll(x.own_logp, x.own_mask)


@torch.no_grad()
def _measures(x: LossInputs) -> dict[str, Tensor]:
    """:func:`sample_stats` as 0-d tensors (no grad), keyed without the prefix."""
    m, adv, log_ratio, ratio = _ratios(x)
    zero = _zero(x.logp)
    clipped = (-adv * torch.clamp(ratio, 1.0 - x.clip_eps, 1.0 + x.clip_eps)) > (-adv * ratio)
    return {
        "kl_ref": kl_ref(x) if x.ref_logp is not None else zero,
        "entropy": entropy_bonus(x) if x.entropy is not None else zero,
        "clip_fraction": masked_token_mean(clipped.to(zero.dtype), m),
        "approx_kl": masked_token_mean(torch.expm1(log_ratio) - log_ratio, m),
        "ratio_mean": masked_token_mean(ratio, m),
        "num_tokens": m.sum(),
    }


def sample_stats(x: LossInputs) -> dict[str, float]:
    """What is measured of the sampled tokens whichever terms are on (Python floats, keyed as
    :class:`PolicyLossOutput`'s): ``policy/kl_ref`` (0 without ``ref_logp``), ``policy/entropy``
    (0 without ``entropy``), ``policy/clip_fraction`` (share of valid tokens where the clipped
    branch is the active one), ``policy/approx_kl`` (token-mean k3 estimate of KL(old || new)
    = mean((r - 1) - log r)), ``policy/ratio_mean`` and ``policy/num_tokens``."""
    return {f"policy/{k}": float(v) for k, v in _measures(x).items()}


def ppo_policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip_eps: float = 0.2,
    *,
    valid: Tensor | None = None,
    ref_logp: Tensor | None = None,
    kl_coef: float = 0.0,
    entropy: Tensor | None = None,
    entropy_coef: float = 0.0,
) -> PolicyLossOutput:
    """The clipped PPO loss with its KL penalty and entropy bonus in one call (the registered
    terms :func:`ppo_clip`, :func:`kl_ref` and :func:`entropy_bonus`):
    loss = pg_loss + kl_coef * kl - entropy_coef * entropy.

    Args:
        logp: float [N, L] log-probs under the current policy (requires grad).
        old_logp: float [N, L] log-probs at rollout time.
        advantages: float [N] (one per step, broadcast to its tokens) or [N, L].
        mask: bool [N, L] output tokens.
        clip_eps: PPO clip range (docs/design.md §5e default 0.2).
        valid: bool [N] rows of valid trajectories (optional; else all rows count).
        ref_logp: float [N, L] reference-policy log-probs for a k3 KL penalty (optional).
        kl_coef: weight of the KL penalty.
        entropy: float [N, L] per-token entropy (e.g. :func:`entropy_from_logits`) (optional).
        entropy_coef: weight of the entropy bonus.
    Returns:
        :class:`PolicyLossOutput`.
    """
    x = LossInputs(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, valid=valid,
                   entropy=entropy, ref_logp=ref_logp, clip_eps=clip_eps)
    zero = _zero(logp)
    pg_loss = ppo_clip(x)
    kl = kl_ref(x) if ref_logp is not None else zero
    ent = entropy_bonus(x) if entropy is not None else zero
    loss = pg_loss + kl_coef * kl - entropy_coef * ent
    st = _measures(x)
    return PolicyLossOutput(
        loss=loss,
        pg_loss=pg_loss,
        kl=kl,
        entropy=ent,
        clip_fraction=st["clip_fraction"],
        approx_kl=st["approx_kl"],
        ratio_mean=st["ratio_mean"],
        num_tokens=int(st["num_tokens"]),
    )


@dataclass
class CriticLossOutput(_LoggedFields):
    """Result of :func:`critic_loss`.

    Attributes:
        loss: scalar MSE to the returns on valid steps (clipped form if ``clip_range`` is set).
        clip_fraction: share of valid steps where the clipped error was the larger one.
        explained_variance: 1 - Var(G - V) / Var(G) over valid steps (nan if Var(G) = 0).
        value_mean: mean predicted value over valid steps.
        num_steps: number of valid steps.
    """

    _prefix = "critic"

    loss: Tensor
    clip_fraction: Tensor
    explained_variance: Tensor
    value_mean: Tensor
    num_steps: int


def critic_loss(
    values: Tensor,
    returns: Tensor,
    mask: Tensor,
    *,
    old_values: Tensor | None = None,
    clip_range: float | None = None,
) -> CriticLossOutput:
    """Critic regression to the returns G_t on valid steps (docs/design.md §5b: MSE).

    Plain: mean over valid steps of (V - G)^2. With ``clip_range`` and ``old_values`` (PPO2-style
    value clipping): V_clip = V_old + clamp(V - V_old, -c, c) and the loss takes
    max((V - G)^2, (V_clip - G)^2) per step.

    Args:
        values: float [...] predictions (requires grad), e.g. [B, T].
        returns: float [...] targets G, same shape.
        mask: bool [...] valid steps (real steps of valid trajectories), same shape.
        old_values: float [...] values at rollout time (needed for clipping).
        clip_range: value clip c, or None for no clipping.
    Returns:
        :class:`CriticLossOutput`.
    """
    m = mask.bool()
    dtype = values.dtype
    zero = torch.zeros((), dtype=dtype, device=values.device)
    v = torch.where(m, values, zero)
    g = torch.where(m, returns.to(dtype).detach(), zero)
    err = (v - g) ** 2
    if clip_range is not None:
        if old_values is None:
            raise ValueError("value clipping needs old_values")
        old = torch.where(m, old_values.to(dtype).detach(), zero)
        v_clip = old + torch.clamp(v - old, -clip_range, clip_range)
        err_clip = (v_clip - g) ** 2
        per_step = torch.maximum(err, err_clip)
        with torch.no_grad():
            clip_fraction = masked_token_mean((err_clip > err).to(dtype), m)
    else:
        per_step = err
        clip_fraction = zero.detach()
    loss = masked_token_mean(per_step, m)

    with torch.no_grad():
        n = m.sum()
        g_mean = masked_token_mean(g, m)
        var_g = masked_token_mean((g - g_mean) ** 2, m)
        resid = g - v
        r_mean = masked_token_mean(resid, m)
        var_r = masked_token_mean((resid - r_mean) ** 2, m)
        explained = 1.0 - var_r / var_g if float(var_g) > 0 else torch.tensor(float("nan"))
        value_mean = masked_token_mean(v, m)
    return CriticLossOutput(
        loss=loss,
        clip_fraction=clip_fraction,
        explained_variance=explained,
        value_mean=value_mean,
        num_steps=int(n),
    )
