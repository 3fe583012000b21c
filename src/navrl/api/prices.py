"""Price table: USD per 1M input / output tokens, per model name (layer 1).

Lookup order: the exact model name, then the longest configured name the model name
starts with (``gpt-4o`` prices ``gpt-4o-2024-08-06``), then the ``default`` entry.
No vendor prices are built in: prices change, and a wrong built-in number is worse than
an explicit zero. Configure them from a dict or a JSON file::

    {"default": [0, 0], "my-model": [0.15, 0.60]}
    {"my-model": {"input": 0.15, "output": 0.60}}
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Price:
    input_per_m: float
    """USD per one million prompt (input) tokens."""
    output_per_m: float
    """USD per one million completion (output) tokens."""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_m + completion_tokens * self.output_per_m) / 1_000_000


def _price(v) -> Price:
    if isinstance(v, Price):
        p = v
    elif isinstance(v, dict):
        p = Price(float(v["input"]), float(v["output"]))
    elif isinstance(v, (list, tuple)) and len(v) == 2:
        p = Price(float(v[0]), float(v[1]))
    else:
        raise ValueError(f"a price is [input, output] or {{'input': .., 'output': ..}} USD per 1M tokens, got {v!r}")
    if p.input_per_m < 0 or p.output_per_m < 0:
        raise ValueError(f"prices must be >= 0, got {v!r}")
    return p


@dataclass
class PriceTable:
    """Model name -> :class:`Price`, with a ``default`` for every other model."""

    prices: dict[str, Price] = field(default_factory=dict)
    """Per-model prices (exact name or name prefix)."""
    default: Price = Price(0.0, 0.0)
    """Price of a model not in :attr:`prices` (zero: local endpoints cost nothing)."""

    def __post_init__(self) -> None:
        self.prices = {str(k): _price(v) for k, v in self.prices.items()}
        self.default = _price(self.default)

    @staticmethod
    def from_dict(d: dict) -> "PriceTable":
        d = dict(d)
        default = d.pop("default", Price(0.0, 0.0))
        return PriceTable(d, default)

    @staticmethod
    def from_file(path: str | os.PathLike) -> "PriceTable":
        try:
            d = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"cannot read price table {path}: {e}") from None
        if not isinstance(d, dict):
            raise ValueError(f"price table {path} must be a JSON object")
        return PriceTable.from_dict(d)

    def lookup(self, model: str) -> Price:
        if model in self.prices:
            return self.prices[model]
        best = max((k for k in self.prices if model.startswith(k)), key=len, default=None)
        return self.prices[best] if best is not None else self.default

    def known(self, model: str) -> bool:
        return model in self.prices or any(model.startswith(k) for k in self.prices)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for one call."""
        return self.lookup(model).cost(prompt_tokens, completion_tokens)
