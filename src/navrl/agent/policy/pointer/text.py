"""Word pieces, alignment measures and text spans of the pointer planner (pure Python).

Text is cut into word pieces: runs of letters, runs of digits, and single other
characters (``"$150.00"`` -> ``$ 150 . 00``). Every piece keeps its character offsets,
so a span of pieces renders as the exact substring it came from (typed text and answers
are copied verbatim, never re-spelled).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

_PIECE = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")

STOPWORDS = frozenset(
    "a an the to of in on at for from with and or my me i is are be it its this that by as your you "
    "what which who when how do does did then than into about up down all any some".split())
"""Function words: always in the vocabulary and ignored by the overlap measures."""

# a span may not start or end on these (they belong to the sentence, not to the value)
_EDGE_BAN = frozenset(',;:"\'()[]{}')
_END_BAN = _EDGE_BAN | {"$", "-", "@", "#", "/"}


@dataclass(frozen=True)
class Piece:
    text: str
    start: int
    end: int

    # cached: featurisation reads them for every piece of every state (pieces are memoised)
    @cached_property
    def key(self) -> str:
        """Lower-cased form used for vocabulary look-up and matching."""
        return self.text.lower()

    @cached_property
    def is_word(self) -> bool:
        return self.text[0].isalpha()

    @cached_property
    def is_number(self) -> bool:
        return self.text[0].isdigit()


@lru_cache(maxsize=200_000)
def pieces(s: str) -> tuple[Piece, ...]:
    """The pieces of ``s`` (memoised: screens repeat the same labels across steps and rollouts)."""
    return tuple(Piece(m.group(0), m.start(), m.end()) for m in _PIECE.finditer(s or ""))


def content_keys(ps: "tuple[Piece, ...] | list[Piece]") -> set[str]:
    """Keys of the pieces that carry meaning: words that are not stopwords, and numbers."""
    return {p.key for p in ps if (p.is_word and p.key not in STOPWORDS) or p.is_number}


def trigrams(s: str) -> set[str]:
    s = " " + re.sub(r"\s+", " ", s.lower().strip()) + " "
    return {s[i:i + 3] for i in range(len(s) - 2)} if len(s) >= 3 else set()


@lru_cache(maxsize=200_000)
def norm(s: str) -> str:
    return re.sub(r"\s+", " ", (s or "").lower().strip())


_AZ09 = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def phrase_in(t: str, o: str) -> bool:
    """``t`` occurs in ``o`` with no ASCII letter or digit just before or after it: what
    ``re.search(r"(?<![a-z0-9])" + re.escape(t) + r"(?![a-z0-9])", o)`` finds, without
    compiling a pattern per label (the re module's cache holds 512)."""
    i, n = o.find(t), len(t)
    while i >= 0:
        j = i + n
        if (i == 0 or o[i - 1] not in _AZ09) and (j == len(o) or o[j] not in _AZ09):
            return True
        i = o.find(t, i + 1)
    return False


def alignment(text: str, other: str, other_keys: set[str] | None = None,
              other_tri: set[str] | None = None, text_tri: set[str] | None = None) -> list[float]:
    """Five alignment features of ``text`` (a label) against ``other`` (the goal, answers ...):

    exact phrase (``text`` occurs in ``other`` on piece boundaries), containment (``other``
    occurs in ``text``), share of ``text``'s content pieces found in ``other``, Jaccard of
    content pieces, share of ``text``'s character trigrams found in ``other``."""
    t, o = norm(text), norm(other)
    if not t or not o:
        return [0.0] * 5
    exact = 1.0 if phrase_in(t, o) else 0.0
    contain = 1.0 if len(o) >= 3 and o in t else 0.0
    tk = content_keys(pieces(text))
    ok = other_keys if other_keys is not None else content_keys(pieces(other))
    inter = len(tk & ok)
    share = inter / len(tk) if tk else 0.0
    jac = inter / len(tk | ok) if (tk | ok) else 0.0
    tt = text_tri if text_tri is not None else trigrams(text)
    ot = other_tri if other_tri is not None else trigrams(other)
    tri = len(tt & ot) / len(tt) if tt else 0.0
    return [exact, contain, share, jac, tri]


def _glued(a: Piece, b: Piece) -> bool:
    """``a`` and ``b`` are one alphanumeric word on the page ("DKV3N3" is DKV|3|N|3)."""
    return a.end == b.start and a.text[0].isalnum() and b.text[0].isalnum()


def spans(ps: "tuple[Piece, ...] | list[Piece]", max_len: int) -> list[tuple[int, int]]:
    """Candidate (first, last) piece index pairs, last inclusive, at most ``max_len`` pieces
    (a word of glued pieces counts as one),
    not starting on a closing/separating character nor ending on an opening one, and never
    cutting through a word: a code like "B36KAZ" is one value, so "B" or "B36" alone is no
    candidate (a typed text or an answer is copied whole)."""
    out = []
    for i, a in enumerate(ps):
        if a.text in _EDGE_BAN or a.text in ".!?" or (i > 0 and _glued(ps[i - 1], a)):
            continue
        units = 0
        for j in range(i, len(ps)):
            units += 0 if j > i and _glued(ps[j - 1], ps[j]) else 1   # a glued word counts once
            if units > max_len:
                break
            if ps[j].text in _END_BAN or (j + 1 < len(ps) and _glued(ps[j], ps[j + 1])):
                continue
            out.append((i, j))
    return out


def _cap(p: Piece) -> bool:
    return p.is_word and p.text[0].isupper()


def _near(a: Piece, b: Piece) -> bool:
    """``b`` follows ``a`` with at most one character between them (a space, an apostrophe)."""
    return b.start - a.end <= 1


def boundary_features(ps: "tuple[Piece, ...] | list[Piece]", i: int, j: int) -> list[float]:
    """Where a span's edges fall in its text, the cues a reader uses to copy a value whole:

    - it is exactly one run of capitalised words ("Stanford University", "San Jose Airport"),
    - it cuts such a run (the name is longer than the span: "University", "Jose Airport"),
    - it ends on a number whose zero fraction it leaves out ("40" of "$40.00"),
    - it ends on a number whose non-zero fraction it leaves out ("19" of "$19.99").
    Entity words reach the planner as placeholders and numbers as such, so without these
    the span's edges are invisible to it."""
    if not ps:
        return [0.0] * 4
    n = len(ps)
    joined_left = i > 0 and _cap(ps[i - 1]) and _near(ps[i - 1], ps[i])
    joined_right = j + 1 < n and _cap(ps[j + 1]) and _near(ps[j], ps[j + 1])
    inner = ps[i:j + 1]
    words = [p for p in inner if p.is_word]
    whole = (_cap(ps[i]) and not joined_left and not joined_right and (_cap(ps[j]) or ps[j].is_number)
             and all(_cap(p) or len(p.text) == 1 for p in words))
    cuts = (_cap(ps[i]) and joined_left) or (_cap(ps[j]) and joined_right)
    zero = nonzero = False
    if ps[j].is_number and j + 2 < n and ps[j + 1].text == "." and ps[j + 2].is_number \
            and ps[j].end == ps[j + 1].start and ps[j + 1].end == ps[j + 2].start:
        zero = set(ps[j + 2].text) == {"0"}
        nonzero = not zero
    return [float(whole), float(cuts), float(zero), float(nonzero)]


def span_text(s: str, ps: "tuple[Piece, ...] | list[Piece]", i: int, j: int) -> str:
    return s[ps[i].start:ps[j].end]
