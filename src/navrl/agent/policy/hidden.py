"""Where a policy's value is read: the hidden state at the last prompt token.

It lives in the agent layer because policies (tiny, Hugging Face) call it; the RL layer's
:mod:`navrl.rl.value_head` re-exports it next to the value head it feeds.
"""
from __future__ import annotations

import torch
from torch import Tensor


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
