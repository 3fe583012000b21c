"""Scalar value head on an LM's hidden states, read at the last prompt token (docs/design.md §5b).

The value V(s_t) is read at the last token *before* the step's output is generated, so the
estimate cannot see the choice it judges. With a causal LM that hidden state depends only on
the prompt (task, screen, history), never on the output tokens that follow it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from navrl.agent.policy.hidden import last_prompt_token_hidden  # noqa: F401  (re-export: the policy layer owns it)

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
