"""PPO policy loss, critic loss, KL-to-reference and entropy terms (docs/design.md §5b).

Token layout: one row per generated planner output (one step of one trajectory), L tokens:

* ``logp``, ``old_logp``, ``ref_logp``  float [N, L] log-probabilities of the sampled tokens
* ``mask``                              bool  [N, L] output tokens (not prompt, not padding)
* ``valid``                             bool  [N]    row belongs to a valid trajectory (optional)

Every token of a row carries the advantage of its step, so advantages may be [N] or [N, L].
Aggregation is a token-mean over all valid tokens of the (mini)batch. Rows of invalid
trajectories and masked tokens are excluded with ``torch.where`` on the inputs, so they add
nothing to the loss, the gradient or the statistics, even when they hold inf or NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

import torch
from torch import Tensor

__all__ = [
    "PolicyLossOutput",
    "CriticLossOutput",
    "token_mask",
    "masked_token_mean",
    "kl_k3",
    "entropy_from_logits",
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
    """Clipped PPO surrogate with per-token ratio r = exp(logp - old_logp).

    pg_loss = token-mean over valid tokens of max(-A r, -A clip(r, 1 - eps, 1 + eps)).

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
    m = token_mask(mask, valid)
    dtype = logp.dtype
    zero = torch.zeros((), dtype=dtype, device=logp.device)
    if advantages.dim() == logp.dim() - 1:
        advantages = advantages.unsqueeze(-1)
    adv = torch.where(m, advantages.to(dtype).detach().expand_as(logp), zero)
    # Mask the log-ratio itself (not the product): padding may hold -inf log-probs.
    log_ratio = torch.where(m, logp - old_logp.detach(), zero)
    ratio = torch.exp(log_ratio)
    surr = -adv * ratio
    surr_clipped = -adv * torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    pg_loss = masked_token_mean(torch.maximum(surr, surr_clipped), m)

    if ref_logp is not None:
        # Mask both inputs (not only the output) so -inf on padding cannot make NaN gradients.
        kl = masked_token_mean(kl_k3(torch.where(m, logp, zero), torch.where(m, ref_logp.detach(), zero)), m)
    else:
        kl = zero
    ent = masked_token_mean(entropy, m) if entropy is not None else zero
    loss = pg_loss + kl_coef * kl - entropy_coef * ent

    with torch.no_grad():
        clip_fraction = masked_token_mean((surr_clipped > surr).to(dtype), m)
        approx_kl = masked_token_mean(torch.expm1(log_ratio) - log_ratio, m)
        ratio_mean = masked_token_mean(ratio, m)
    return PolicyLossOutput(
        loss=loss,
        pg_loss=pg_loss,
        kl=kl,
        entropy=ent,
        clip_fraction=clip_fraction,
        approx_kl=approx_kl,
        ratio_mean=ratio_mean,
        num_tokens=int(m.sum()),
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
