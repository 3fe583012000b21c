"""Scalar value head on an LM's hidden states, read at the last prompt token (DESIGN §5).

The value V(s_t) is read at the last token *before* the step's output is generated, so the
estimate cannot see the choice it judges. With a causal LM that hidden state depends only on
the prompt (task, screen, history), never on the output tokens that follow it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["ValueHead", "last_prompt_token_hidden"]


class ValueHead(nn.Module):
    """Linear(hidden_size -> 1) returning one value per position.

    The projection runs in the head's own dtype (float32 by default) even when the LM runs in
    bf16/fp16, because small value differences matter for G - V.

    Args:
        hidden_size: H of the LM.
        init_std: std of the weight init; bias starts at 0.
    """

    def __init__(self, hidden_size: int, init_std: float | None = None) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden_size, 1)
        nn.init.normal_(self.proj.weight, std=init_std if init_std is not None else hidden_size**-0.5)
        nn.init.zeros_(self.proj.bias)

    def forward(self, hidden: Tensor) -> Tensor:
        """float [..., H] -> float [...]."""
        return self.proj(hidden.to(self.proj.weight.dtype)).squeeze(-1)


def last_prompt_token_hidden(
    hidden_states: Tensor,
    prompt_lengths: Tensor | None = None,
    attention_mask: Tensor | None = None,
    padding_side: str = "right",
) -> Tensor:
    """Hidden state at the last prompt token of each sequence.

    Supported layouts (each row = optional padding + prompt + optional output):

    * ``prompt_lengths`` given, ``padding_side="right"``: rows start with the prompt
      (``[prompt, output, pad...]``); index = P - 1. ``attention_mask`` is not needed.
    * ``prompt_lengths`` given, ``padding_side="left"``: padding comes first
      (``[pad..., prompt, output(, pad...)]``, e.g. verl's left-padded prompt + right-padded
      response); needs ``attention_mask`` to find the first real token f; index = f + P - 1.
    * only ``attention_mask`` given: the rows hold the prompt alone (a prompt-only forward
      pass), either padding side; index = the last position with mask 1.

    Args:
        hidden_states: float [B, L, H].
        prompt_lengths: long [B] number of prompt tokens (>= 1, padding excluded).
        attention_mask: [B, L], 1/True on real tokens.
        padding_side: "right" or "left".
    Returns:
        float [B, H].
    Raises:
        ValueError: unknown padding side, missing inputs, or an index outside [0, L).
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    B, L, _ = hidden_states.shape
    device = hidden_states.device
    if prompt_lengths is not None:
        plen = prompt_lengths.to(device=device, dtype=torch.long)
        if bool((plen < 1).any()):
            raise ValueError("every prompt needs at least one token")
        if padding_side == "right":
            index = plen - 1
        else:
            if attention_mask is None:
                raise ValueError("left padding needs attention_mask to locate the first real token")
            real = attention_mask.to(device).bool()
            if not bool(real.any(dim=1).all()):
                raise ValueError("a row has no real token")
            first = real.long().argmax(dim=1)  # first True
            index = first + plen - 1
    elif attention_mask is not None:
        real = attention_mask.to(device).bool()
        if not bool(real.any(dim=1).all()):
            raise ValueError("a row has no real token")
        positions = torch.arange(L, device=device).expand(B, L)
        index = torch.where(real, positions, torch.full_like(positions, -1)).max(dim=1).values
    else:
        raise ValueError("pass prompt_lengths or attention_mask")
    if bool((index < 0).any()) or bool((index >= L).any()):
        raise ValueError(f"last prompt token index out of range [0, {L}): {index.tolist()}")
    return hidden_states[torch.arange(B, device=device), index]
