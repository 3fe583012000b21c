"""The tiny text planner's sizes (:class:`TinyConfig`), apart from its torch code so that reading
a preset does not import torch."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = 2048
    """Tokenizer vocabulary size (set from the trained tokenizer)."""
    d_model: int = 128
    """Width of the residual stream."""
    n_layers: int = 3
    """Transformer blocks."""
    n_heads: int = 4
    """Attention heads per block."""
    d_ff: int = 384
    """Hidden size of each MLP."""
    max_len: int = 640
    """Longest prompt + output in tokens (prompts are cut from the left beyond it)."""
    max_new_tokens: int = 72
    """Generation budget per step."""
    history: int = 3
    """Earlier steps shown in the prompt (step text only)."""
    ui_lines: int = 40
    """UI-tree lines shown in the prompt."""
    copy_prev_token: bool = True
    """Copy keys also carry the identity of the token before each prompt position, so that
    after emitting a copied token the next key to match is simply its successor: typed text
    and answers (``Type "555-867-5309"``) become a chain of one-step lookups instead of a
    positional skill the model must first discover."""
