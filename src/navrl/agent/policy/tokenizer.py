"""A byte-level BPE tokenizer trained on the phone world's own text (``tokenizers``).

Byte-level, so any string — a label never seen in training, typed text with symbols —
encodes and decodes losslessly.
"""
from __future__ import annotations

from typing import Iterable

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

PAD, BOS, SEP, EOS = "<pad>", "<bos>", "<sep>", "<eos>"
SPECIALS = [PAD, BOS, SEP, EOS]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 4096, labels: Iterable[str] = ()) -> Tokenizer:
    """Byte-level BPE on ``texts``; every string in ``labels`` (UI labels) becomes one token.

    Label tokens make a label one copy decision for the planner instead of several, which
    is what lets a tiny model learn to act in minutes; labels never seen still encode
    losslessly through the byte-level pieces.
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    extra = sorted({lab for lab in labels if 2 <= len(lab) <= 40 and lab.strip() == lab})
    if extra:
        tok.add_tokens([AddedToken(lab, single_word=True, normalized=False) for lab in extra])
    return tok


def phone_world_labels(n_tasks: int = 300, seed: int = 0) -> list[str]:
    """UI labels seen by the expert on tasks of every suite (both skins, all apps)."""
    return sorted(corpus_and_labels(n_tasks, seed)[1])


def phone_world_corpus(n_tasks: int = 300, seed: int = 0) -> list[str]:
    """Prompts and expert outputs from every suite (labels of both skins and all apps)."""
    return corpus_and_labels(n_tasks, seed)[0]


def corpus_and_labels(n_tasks: int, seed: int) -> tuple[list[str], set[str]]:
    """(prompts and expert outputs, UI labels) of the phone world: its ``corpus`` hook."""
    from navrl.tasks.registry import get_world
    return get_world("phone").hook("corpus")(n_tasks, seed)
