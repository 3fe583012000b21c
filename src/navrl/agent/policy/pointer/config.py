"""The pointer planner's sizes and switches (:class:`PointerConfig`), apart from its torch code so
that reading a preset (the CLI builds its parser from them) does not import torch."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PointerConfig:
    d_model: int = 64
    """Width of the encoder."""
    n_layers: int = 2
    """Encoder layers (self-attention over all elements of a state)."""
    n_heads: int = 4
    """Attention heads."""
    d_ff: int = 128
    """Hidden size of each feed-forward block."""
    max_frames: int = 16
    """Question frames the ask head can choose from (learnt from demonstrations)."""
    placeholder_scale: float = 1.0
    """Norm scale of the fixed random entity vectors."""
    text_reads_field: bool = False
    """The text-span pointer's query also reads the focused field's encoded row (the field the
    text will go into), through a layer initialised at zero: what to type can depend on where
    (a recipient into "To", the first app's fact into the message body), as DOM-Q-NET's type
    action chooses its goal token given the element. Off: the query reads the state token and
    the kind alone."""
    type_on_screen: bool = False
    """What the screen shows can be typed: every on-screen span (a node's label or value, up to
    8 pieces) is a typable candidate, not only an answer, and a node value longer than that is
    one more candidate whole (a text area's text). MiniWoB++ asks for it (read-table types a
    table cell, find-word a paragraph's word, copy-paste a text area's text). Off (the phone
    world's planners): typed text comes from the goal, the answers and the episode memory."""
