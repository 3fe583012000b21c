"""From planner context to the pointer planner's input, and back from its decision to text.

A context becomes a compact JSON *prompt* (the exact input the planner conditions on, so
the trainer can store it and ``score`` can rebuild the same features), which
:func:`encode` turns into an :class:`Encoded` state: piece ids, per-node features and
alignment against the goal and answers, the node x goal-piece match matrix that biases
attention, which kinds and nodes are legal, and the candidate text spans.

Decisions are factorised (docs/design.md §3a): ``kind``, then a node (tap, long press, swipe
left/right on) or a text candidate (type, answer, the subject of a question), then a
question frame (ask). A decision is a short list of ints — the planner's "output token
ids" — and renders as the Step line of docs/design.md §3.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import operator
import re
import zlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from navrl.agent.policy.pointer.text import (Piece, STOPWORDS, phrase_in, alignment, boundary_features, content_keys, norm,
                                             pieces, span_text, spans, trigrams)
from navrl.agent.steps import is_drag, ordinal
from navrl.lru import BoundedCache
from navrl.observation import SAME_KIND, DrawnThing, UINode, drawn_thing, fits_description
from navrl.tasks.task import step_kinds_of

KINDS = ("tap", "long_press", "type", "swipe_up", "swipe_down", "swipe_left", "swipe_right", "home", "ask",
         "complete", "answer", "drag")
K = len(KINDS)
K_FIRST = 11
"""Kinds the planner's kind-sized layers are initialised with; kinds appended since (``drag``)
get zero rows (or columns), so a seed gives the same planner as before they were added and a
planner saved with 11 kinds loads and decides as it did (the new kind is legal only where a
node accepts a drag: no phone-world screen has one)."""
KIND_ID = {k: i for i, k in enumerate(KINDS)}
NODE_KINDS = {"tap": "tap", "long_press": "long_press", "swipe_left": "swipe", "swipe_right": "swipe",
              "drag": "drag"}
"""Kinds that point at a node, and the action the node must accept."""
DRAG = KIND_ID["drag"]
DRAG_DIRECTIONS = ("up", "down", "left", "right")
"""A drag's destination (its third factor, ``Decision.frame``): node ``j`` (< MAX_NODES), or the
direction ``DRAG_DIRECTIONS[j - MAX_NODES]`` (a drag from the node that far, as a swipe goes)."""
STEP_KIND_DECISIONS = {"tap": ("tap",), "long_press": ("long_press",), "type": ("type",),
                       "swipe": ("swipe_up", "swipe_down", "swipe_left", "swipe_right", "drag"), "home": ("home",),
                       "ask_user": ("ask",), "complete": ("complete", "answer")}
"""The planner's kinds that write each step kind (navrl.tasks.task.STEP_KINDS)."""
TEXT_KINDS = ("type", "answer", "ask")
"""Kinds that point at a text candidate (typed text, answer, the subject of a question)."""

@lru_cache(maxsize=64)
def step_kinds_mask(kinds: tuple[str, ...]) -> np.ndarray:
    """[K] bool: the planner's kinds that write one of the step kinds ``kinds`` (read-only)."""
    m = np.zeros(K, bool)
    for k in kinds:
        for d in STEP_KIND_DECISIONS.get(k, ()):
            m[KIND_ID[d]] = True
    m.flags.writeable = False
    return m


ROLES = ("other", "button", "text", "textfield", "cell", "tab", "header", "icon", "switch", "dialog", "image",
         "link", "checkbox", "radio", "slider", "combobox", "option", "listbox", "menuitem", "menu", "title")
ROLE_ID = {r: i for i, r in enumerate(ROLES)}
FIXED_ANSWERS = ("Yes", "No")
"""Answers that are not on screen (yes/no questions)."""

DATE_COLUMNS = True
"""The date node columns (:data:`_COL_GOAL_DAY` .. :data:`_COL_SHOWN_OTHER`) are filled; False
leaves them 0 (the control run of tests/agent/test_pointer_expressive.py's date-picker clone)."""

# sizes (inputs beyond them are cut: the first nodes, the start of the goal)
MAX_CTX = 96          # goal + answer (+ episode memory) pieces
MAX_NODES = 96
MAX_HIST = 4
MAX_NODE_PIECES = 24  # pieces per label or value
MAX_SPAN_CTX = 16     # pieces per goal/answer span
MAX_SPAN_SCREEN = 8   # pieces per on-screen span
N_PLACEHOLDERS = 128

NODE_FEATS = 46
CTX_FEATS = 6
GLOBAL_FEATS = 5
CAND_FEATS = 20
HIST_FEATS = 3

FEATURE_LAYOUT = {"node": NODE_FEATS, "ctx": CTX_FEATS, "global": GLOBAL_FEATS, "cand": CAND_FEATS, "hist": HIST_FEATS,
                  "kinds": len(KINDS), "max_ctx": MAX_CTX, "max_nodes": MAX_NODES, "max_hist": MAX_HIST,
                  "placeholders": N_PLACEHOLDERS}
"""The planner's input layout, saved with its weights: a checkpoint of another layout (features
added since it was written) is refused by name, not by a tensor-size traceback."""


class LayoutMismatch(ValueError):
    """A saved planner whose input layout differs from this navrl's (:data:`FEATURE_LAYOUT`)."""


class PointerInputError(ValueError):
    """A prompt that is not a pointer-planner state."""


# ---------------------------------------------------------------------------- prompts
def _nodes_json(obs) -> tuple[str, list]:
    """The prompt's node rows of an observation and their JSON, memoised by the nodes
    themselves and the screen size (a screen recurs across steps and sibling rollouts)."""
    W, H = obs.screen_size if obs.screen_size and obs.screen_size[0] else (1, 1)
    try:
        # the nodes' fields, read in C (hashing the nodes themselves calls the dataclass's
        # __hash__ and, on a hit, __eq__ per node in Python: a tenth of a batch-16 decision)
        key = (tuple(map(_NODE_FIELDS, obs.nodes[:MAX_NODES])), W, H)
        hit = _NODE_ROWS.get(key)
    except (TypeError, AttributeError):   # unhashable nodes, or not UINodes: no memo
        key, hit = None, None
    if hit is not None:
        return hit
    nodes = []
    for n in obs.nodes[:MAX_NODES]:
        x0, y0, x1, y1 = n.bounds
        nodes.append([n.role, n.label or "", n.value or "", int(bool(n.enabled)), int(bool(n.focused)),
                      "".join(a[0] for a in n.actions),   # t(ap) l(ong_press) s(wipe) d(rag)
                      [round(x0 / W, 3), round(y0 / H, 3), round(x1 / W, 3), round(y1 / H, 3)]])
        if n.description or n.hidden:     # written only when there is one (a web textarea's "textarea")
            nodes[-1].append(n.description)
        if n.hidden:          # a node that scrolls by itself: where its content runs past its box
            nodes[-1].append(n.hidden)
    out = (json.dumps(nodes, separators=(",", ":")), nodes)
    return _NODE_ROWS.put(key, out) if key is not None else out


_NODE_ROWS: BoundedCache[tuple, tuple[str, list]] = BoundedCache(4096)
"""Node rows and their JSON, keyed by (the fields of the observation's first MAX_NODES nodes,
screen size)."""
_NODE_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(UINode)))
"""A UINode's fields as a tuple: what its equality and hash compare."""


@dataclass(frozen=True)
class PromptParts:
    """What a prompt holds, as :func:`context_parts` built it (``nodes_json``: its node list's
    JSON, the key of the screen-level memo): :func:`encode_parts` of them is :func:`encode`
    of the prompt, without parsing it back."""
    goal: str
    answers: list
    hist: list
    app: str
    t: int
    nodes: list
    seen: list
    nodes_json: str
    apps: list = field(default_factory=list)
    kinds: list = field(default_factory=list)   # the task's step kinds; empty: all (navrl.tasks.task.step_kinds_of)


_JSON = json.JSONEncoder(separators=(",", ":"))
"""``json.dumps(x, separators=(",", ":"))`` without building an encoder per call."""


def context_parts(ctx, max_hist: int = MAX_HIST) -> tuple[str, PromptParts]:
    """The JSON prompt of a :class:`~navrl.agent.planner.PlannerContext` and its parts."""
    obs = ctx.obs
    nj, nodes = _nodes_json(obs)
    hist = [step for _, step in ctx.history[-max_hist:]]
    answers = [[q, a] for q, a in ctx.answers]
    head = {"g": ctx.task.goal, "a": answers, "h": hist, "app": obs.app or "", "t": len(ctx.history)}
    used = list(getattr(ctx, "apps", ()) or ())
    if used:      # written only when there are some: a single-app prompt is unchanged
        head["u"] = used
    allowed = step_kinds_of(ctx.task)
    kinds = sorted(allowed) if allowed is not None else []
    if kinds:     # written only for a world with an action space of its own (MiniWoB++)
        head["k"] = kinds
    seen = list(getattr(ctx, "seen", ()) or ())
    # json.dumps of the whole dict, its node list's JSON spliced in (dicts keep their order)
    s = _JSON.encode(head)[:-1] + ',"n":' + nj
    if seen:
        s += ',"m":' + _JSON.encode(seen)
    s += "}"
    return s, PromptParts(head["g"], answers, hist, head["app"], head["t"], nodes, seen, nj, used, kinds)


def context_prompt(ctx, max_hist: int = MAX_HIST) -> str:
    """The JSON prompt of a :class:`~navrl.agent.planner.PlannerContext`."""
    return context_parts(ctx, max_hist)[0]


# ---------------------------------------------------------------------------- encoded state
@dataclass
class Cand:
    """A text candidate: a span of the goal/answers (``src`` 0/1), of a node's label/value
    (``src`` 2/3), or a fixed answer (``src`` 4)."""
    src: int
    text: str
    a: int            # first reference row (ctx position, screen-piece row, or fixed row)
    b: int            # last reference row
    feats: list[float]
    usable: tuple[bool, bool, bool]   # by type, answer, ask


@dataclass
class Encoded:
    """A state as the model reads it: numpy arrays (ids int64, features float32, masks bool),
    some shared with other states of the same screen (read them, never write them), and the
    history's few numbers as tuples."""
    goal: str
    ctx_ids: np.ndarray                # [Lc] piece ids of goal + answers
    ctx_seg: np.ndarray                # 0 goal, 1 answer
    ctx_pos: np.ndarray
    ctx_feats: np.ndarray              # [Lc, CTX_FEATS]
    hist_kind: tuple[int, ...]         # [H] (the history's fields are a few numbers: tuples, made
    hist_words: tuple[int, ...]        # arrays once per batch) the steps' piece ids, step by step
    hist_n: tuple[int, ...]            # [H] pieces per step
    hist_feats: tuple[float, ...]      # [H * HIST_FEATS]
    glob: np.ndarray                   # [GLOBAL_FEATS]
    node_role: np.ndarray              # [N]
    node_label_ids: np.ndarray         # the labels' piece ids, node by node
    node_label_n: np.ndarray           # [N] pieces per label
    node_value_ids: np.ndarray         # the values' piece ids, node by node
    node_value_n: np.ndarray           # [N]
    node_feats: np.ndarray             # [N, NODE_FEATS]
    node_labels: list[str]
    node_accept: np.ndarray            # [N, K] bool
    match_ctx: np.ndarray              # [M, 2] (node, ctx) pairs that share a content piece
    match_hist: tuple                  # (node, hist) pairs, sorted: the node is that step's target
    scr_ids: np.ndarray                # [S] on-screen pieces (for text candidates)
    scr_node: np.ndarray
    scr_pos: np.ndarray
    kind_mask: np.ndarray              # [K] bool
    cand_text: tuple[str, ...] = ()
    cand_src: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cand_a: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cand_b: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cand_feats: np.ndarray = field(default_factory=lambda: np.zeros((0, CAND_FEATS), np.float32))
    cand_use: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), bool))

    def weight(self) -> int:
        """Bytes of this state, roughly: its larger arrays (those it shares with other states of
        its screen counted in each), ~64 bytes a candidate text and node label, 2 KB for the rest;
        what a cache of states weighs it at. A few attribute reads (~1 us: it is paid on every
        state a planner encodes)."""
        return (self.cand_feats.nbytes + self.cand_use.nbytes + 24 * len(self.cand_a) + self.node_feats.nbytes
                + self.node_accept.nbytes + self.ctx_feats.nbytes + 8 * (len(self.scr_ids) + self.match_ctx.size)
                + 64 * (len(self.cand_text) + len(self.node_labels)) + 2048)

    @cached_property
    def focus(self) -> int:
        """The focused node's index (the field typed text goes into), -1 when none is."""
        f = np.flatnonzero(self.node_feats[:, _COL_FOCUSED] > 0.5)
        return int(f[0]) if len(f) else -1

    @cached_property
    def cands(self) -> list[Cand]:
        """The text candidates as objects (built on first use: plan reads the arrays)."""
        return [Cand(int(src), t, int(a), int(b), f.tolist(), (bool(u[0]), bool(u[1]), bool(u[2])))
                for src, t, a, b, f, u in zip(self.cand_src, self.cand_text, self.cand_a, self.cand_b,
                                              self.cand_feats, self.cand_use)]


@dataclass(frozen=True)
class _Cands:
    """The text candidates of one text (a label, a value, the goal, an answer) as arrays:
    built once per text, shifted to a state's reference rows when a state uses them."""
    text: tuple[str, ...]
    src: np.ndarray
    a: np.ndarray
    b: np.ndarray
    feats: np.ndarray
    use: np.ndarray

    @staticmethod
    def of(src: int, rows: tuple[tuple[int, int, str, tuple, tuple], ...]) -> "_Cands":
        n = len(rows)
        return _Cands(tuple(r[2] for r in rows), np.full(n, src, np.int64),
                      np.asarray([r[0] for r in rows], np.int64).reshape(n),
                      np.asarray([r[1] for r in rows], np.int64).reshape(n),
                      np.asarray([r[3] for r in rows], np.float32).reshape(n, CAND_FEATS),
                      np.asarray([r[4] for r in rows], bool).reshape(n, 3))


def _join_cands(blocks: list[tuple[_Cands, int]]) -> _Cands:
    """The candidates of (block, its first reference row) pairs, in order, in one block."""
    text: list[str] = []
    for blk, _ in blocks:
        text.extend(blk.text)
    shift = np.repeat(np.asarray([r for _, r in blocks], np.int64), [len(blk.text) for blk, _ in blocks])
    return _Cands(tuple(text), np.concatenate([blk.src for blk, _ in blocks]),
                  np.concatenate([blk.a for blk, _ in blocks]) + shift,
                  np.concatenate([blk.b for blk, _ in blocks]) + shift,
                  np.concatenate([blk.feats for blk, _ in blocks]), np.concatenate([blk.use for blk, _ in blocks]))


class Vocab:
    """Word -> id. 0 is padding, 1..V the UI words and punctuation, then placeholders.

    Also memoises the per-label work of :func:`encode` that does not depend on the rest of
    the state (alignment against the goal and answers): screens repeat the same labels across
    steps and sibling rollouts."""

    def __init__(self, words):
        from navrl.agent.policy.pointer.vocab import PUNCTUATION
        self.words = list(dict.fromkeys(list(words) + list(PUNCTUATION)))
        self.index = {w: i + 1 for i, w in enumerate(self.words)}
        # ~5 KB a set: 50,000 of them are ~250 MB (200,000 grew a long run by ~1 GB, §20)
        self._tri: BoundedCache[str, frozenset[str]] = BoundedCache(50_000, evict="all")
        self._facts: BoundedCache[str, bool] = BoundedCache(100_000, evict="all")
        self._seen: BoundedCache[tuple, tuple[str, ...]] = BoundedCache(20_000, evict="all")
        self._steps: BoundedCache[str, tuple] = BoundedCache(50_000, evict="all")
        self._align: BoundedCache[tuple[str, str, str, str], tuple[float, ...]] = BoundedCache(200_000, evict="all")
        self._screens: BoundedCache[tuple[str, str, str, tuple[str, ...]], _Screen] = BoundedCache(2_000, touch=True)
        """Encoded screens keyed by (the prompt's node list as JSON, app, goal, answer texts):
        all of a state but what its history and step count change (see :func:`_encode`)."""
        self._nodes: BoundedCache[tuple, tuple] = BoundedCache(50_000, evict="all")
        """A node's part of its screen (:func:`_node_row`) keyed by (goal, answer texts, the
        node's prompt row): screens that differ share most of their nodes."""
        self.type_on_screen = False
        """On-screen spans can be typed, and a long node value whole (the planner's
        :attr:`~navrl.agent.policy.pointer.config.PointerConfig.type_on_screen`)."""

    @property
    def size(self) -> int:
        return len(self.words) + 1

    def ids(self) -> "_Ids":
        return _Ids(self)

    def step_row(self, step: str) -> tuple:
        """A history step's kind, its target's first 8 pieces (a word's id, an entity's key),
        whether any is an entity, the normalised target and whether it has one."""
        r = self._steps.get(step)
        if r is None:
            k, keys, tn, has_tgt = _step_row(step)
            ids = tuple(self.index.get(key, key) for key in keys)
            r = self._steps.put(step, (k, ids, any(type(i) is str for i in ids), tn, has_tgt))
        return r

    def facts(self, seen: tuple) -> tuple[str, ...]:
        """The episode-memory texts that join the answers (:meth:`is_fact`)."""
        f = self._seen.get(seen)
        if f is None:
            f = self._seen.put(seen, tuple(m for m in map(str, seen) if self.is_fact(m)))
        return f

    def is_fact(self, text: str) -> bool:
        """Whether an episode-memory text holds an entity or a number (it then joins the answers)."""
        f = self._facts.get(text)
        if f is None:
            f = self._facts.put(text, any(p.is_number or p.key not in self.index for p in pieces(text)))
        return f

    def abstract_trigrams(self, text: str, max_pieces: int | None = None) -> frozenset[str]:
        """Character trigrams of ``text`` with every entity piece replaced by one character of
        its own: fuzzy matching of UI words ("Add to Bag" ~ "Add to cart") without reading an
        entity's spelling (two texts share an entity's trigrams only if both contain it)."""
        key = text if max_pieces is None else f"{max_pieces}\x00{text}"
        t = self._tri.get(key)
        if t is None:
            ps = pieces(text)[:max_pieces]
            abstract = " ".join(p.key if p.key in self.index else _entity_char(p.key) for p in ps)
            t = self._tri.put(key, frozenset(trigrams(abstract)))
        return t

    def node_alignment(self, label: str, value: str, goal: str, answers: str) -> tuple[float, ...]:
        """A node's 9 alignment features: its label against the goal (5: exact, contained,
        share, Jaccard, trigram share) and the answers (3), and its value's share against the goal."""
        key = (label, value, goal, answers)
        f = self._align.get(key)
        if f is None:
            goal_keys, goal_tri = content_keys(pieces(goal)), self.abstract_trigrams(goal)
            ltri = self.abstract_trigrams(label, MAX_NODE_PIECES)
            out = alignment(label, goal, goal_keys, goal_tri, ltri)
            if answers:
                out += alignment(label, answers, content_keys(pieces(answers)), self.abstract_trigrams(answers),
                                 ltri)[:3]
            else:
                out += [0.0, 0.0, 0.0]
            out.append(alignment(value, goal, goal_keys, goal_tri, self.abstract_trigrams(value, MAX_NODE_PIECES))[2]
                       if value else 0.0)
            f = self._align.put(key, tuple(out))
        return f


def _entity_char(key: str) -> str:
    # a stable character per entity (crc32: Python's str hash is salted per process)
    return chr(0xF0000 + zlib.crc32(key.encode()) % 0xFFF0)


@lru_cache(maxsize=100_000)
def _node_keys(label: str, value: str) -> frozenset[str]:
    """Content keys of a node's (cut) label and value: what the node x goal match matrix uses."""
    ps = pieces(label)[:MAX_NODE_PIECES] + pieces(value)[:MAX_NODE_PIECES]
    return frozenset(p.key for p in ps if (p.is_word and p.key not in STOPWORDS) or p.is_number)


def _span_cands(src: int, s: str, max_span: int) -> tuple[tuple[int, int, str, tuple, tuple], ...]:
    """On-screen text candidates of one label or value: (first piece, last piece, text,
    features, usable by type/answer/ask). Not memoised: :func:`_span_block` keeps them as arrays
    (memoised as tuples of Python floats too, they held ~1 GB by a long run's 100th update;
    docs/results/exploration.md §20)."""
    ps = pieces(s)[:MAX_NODE_PIECES]
    out = []
    for a, b in spans(ps, max_span):
        txt = span_text(s, ps, a, b)
        out.append((a, b, txt, tuple(_cand_feats(src, txt, ps, a, b, quoted=False)), (False, _answerable(txt), False)))
    return tuple(out)


@lru_cache(maxsize=100_000)
def _span_block(src: int, s: str) -> _Cands:
    return _Cands.of(src, _span_cands(src, s, MAX_SPAN_SCREEN))


@lru_cache(maxsize=20_000)
def _screen_block(texts: tuple[tuple[str, str], ...]) -> _Cands:
    """The on-screen candidates of a screen's (label, value) pairs, rows counted from its first
    screen piece (a screen recurs across steps and sibling rollouts with other histories)."""
    blocks, row = [], 0
    for label, value in texts:
        for src, s in ((2, label), (3, value)):
            blocks.append((_span_block(src, s), row))
            row += len(pieces(s)[:MAX_NODE_PIECES])
    return _join_cands(blocks) if blocks else _Cands.of(2, ())


@lru_cache(maxsize=20_000)
def _whole_values_block(texts: tuple[tuple[str, str], ...]) -> _Cands:
    """A typable candidate of each node value longer than an on-screen span (a text area's
    whole text, which copy-paste types), verbatim, its reference rows the value's first and
    last (kept) piece; rows counted as :func:`_screen_block` counts them."""
    rows, row = [], 0
    for label, value in texts:
        row += len(pieces(label)[:MAX_NODE_PIECES])
        ps = pieces(value)[:MAX_NODE_PIECES]
        sp = spans(ps, MAX_SPAN_SCREEN) if value else []
        if sp and (0, len(ps) - 1) not in sp:          # no span covers the whole value
            txt = value      # verbatim: what a script that copies it types
            rows.append((row, row + len(ps) - 1, txt, tuple(_cand_feats(3, txt, ps, 0, len(ps) - 1, quoted=False)),
                         (True, _answerable(txt), False)))
        row += len(ps)
    return _Cands.of(3, tuple(rows))


@lru_cache(maxsize=20_000)
def _ctx_block(seg: int, s: str, n: int) -> _Cands:
    return _Cands.of(seg, _ctx_cands(seg, s, n))


@lru_cache(maxsize=1)
def _fixed_block() -> _Cands:
    return _Cands.of(4, tuple((k, k, w, tuple(_cand_feats(4, w, [], 0, 0, False)), (False, True, False))
                              for k, w in enumerate(FIXED_ANSWERS)))


def _slot(ph: dict, key: str) -> int:
    """The placeholder of entity ``key`` in a state whose entities so far are ``ph`` (key ->
    slot): the next free one at its first appearance, the same one after (slot j has id
    ``vocab.size + j``)."""
    j = ph.get(key)
    if j is None:
        j = ph[key] = len(ph) % N_PLACEHOLDERS
    return j


class _Ids:
    """Piece ids for one state: entities get placeholders in order of first appearance."""

    def __init__(self, v: Vocab):
        self.v, self.ph = v, {}

    def __call__(self, p: Piece) -> int:
        i = self.v.index.get(p.key)
        return i if i is not None else self.v.size + _slot(self.ph, p.key)


_SCR_POS = [min(k, 31) for k in range(MAX_NODE_PIECES)]


_QUOTED = re.compile(r'"([^"]+)"')


@lru_cache(maxsize=20_000)
def _step_row(step: str) -> tuple[int, tuple[str, ...], str, bool]:
    """A history step's kind, the keys of its target's first 8 pieces, the normalised target
    and whether it has one."""
    k, tgt = _step_kind_target(step)
    return k, tuple(p.key for p in pieces(tgt)[:8]), norm(tgt), bool(tgt)


@lru_cache(maxsize=20_000)
def _step_kind_target(step: str) -> tuple[int, str]:
    from navrl.agent.steps import parse_step
    c = parse_step(step)
    if is_drag(c):
        k = "drag"
    elif c.kind == "swipe":
        k = f"swipe_{c.direction}"
    elif c.kind == "ask_user":
        k = "ask"
    elif c.kind == "complete":
        k = "answer" if c.text else "complete"
    else:
        k = c.kind
    return KIND_ID.get(k, KIND_ID["home"]), (c.target or c.text or "")


def encode(prompt: str, vocab: Vocab) -> Encoded:
    try:
        d = json.loads(prompt)
        goal, answers, hist, nodes = str(d["g"]), d["a"], d["h"], d["n"]
        app, t = str(d.get("app", "")), int(d.get("t", 0))
        seen = d.get("m", ())
        used = tuple(map(str, d.get("u", ())))
        kinds = tuple(map(str, d.get("k", ())))
        nj = _nodes_text(prompt, d)
    except (ValueError, KeyError, TypeError) as e:
        raise PointerInputError(f"not a pointer-planner prompt ({type(e).__name__})") from None
    return _encode(goal, answers, hist, app, t, nodes, seen, nj, vocab, used, kinds)


def _nodes_text(prompt: str, d: dict) -> str:
    """The JSON of a parsed prompt's node list, the screen memo's key: cut out of the prompt
    when it is laid out as :func:`context_parts` writes it (then it is the JSON that function
    wrote), else written anew. Cut only when no object but the prompt itself is opened before
    the list ends and the list is the last value but the episode memory's, each key once: then
    ``,"n":[`` and ``,"m":[`` occur in the text only where those keys are (a quote inside a
    string is escaped) and the text between is the list's own."""
    keys = list(d)
    last_m = keys[-1] == "m"
    if (keys[-1] == "n" or (last_m and len(keys) > 1 and keys[-2] == "n")) and prompt[-1:] == "}":
        i = prompt.find(',"n":[')
        end = prompt.find(',"m":[', i) if last_m else len(prompt) - 1
        if (0 < i < end and prompt.find("{", 1, end) < 0 and prompt.count(',"n":[') == 1
                and (not last_m or prompt.count(',"m":[') == 1)):
            return prompt[i + 5:end]
    return json.dumps(d["n"], separators=(",", ":"))


def encode_parts(parts: PromptParts, vocab: Vocab) -> Encoded:
    """:func:`encode` of the prompt that :func:`context_parts` built with ``parts``."""
    return _encode(str(parts.goal), parts.answers, parts.hist, str(parts.app), int(parts.t), parts.nodes, parts.seen,
                   parts.nodes_json, vocab, tuple(map(str, parts.apps)), tuple(map(str, parts.kinds)))


@dataclass
class _Screen:
    """Everything of an encoded state that its history and step count leave alone: the goal
    and answers rows, the nodes' rows (their history columns zero), the node x goal matches, the
    text candidates. Entity pieces of the nodes are kept as ``-(k + 1)`` (the k-th entity of
    the screen, in order of first appearance) and resolved per state: a state's history can
    take placeholders before the nodes do."""
    ctx_ids: np.ndarray
    ctx_seg: np.ndarray
    ctx_pos: np.ndarray
    ctx_feats: np.ndarray
    ctx_ph: dict
    node_role: np.ndarray
    node_label: np.ndarray      # local ids, node by node
    node_label_n: np.ndarray    # [N] pieces per label
    node_value: np.ndarray
    node_value_n: np.ndarray
    node_feats: np.ndarray      # [N, NODE_FEATS], history columns zero
    node_labels: list
    node_accept: np.ndarray
    match_ctx: np.ndarray
    scr_ids: np.ndarray         # local ids
    scr_node: np.ndarray
    scr_pos: np.ndarray
    ents: tuple                 # the nodes' entity keys, in order of first appearance
    label_rows: dict            # normalised label -> node indices
    labels_now: frozenset
    has_focus: bool
    n_all: int
    kind_mask: np.ndarray
    cands: "_Cands"
    resolved: dict = field(default_factory=dict)   # entities the history added (in order) -> the nodes' ids


_NODE_BASE_FEATS = 14 + 9
"""Node features that depend on the node, goal and answers only: 14 flags and box values, 9 alignment
(:func:`_node_row`); the history columns follow them."""
_COL_IN_HIST, _COL_LAST = _NODE_BASE_FEATS, _NODE_BASE_FEATS + 1
_COL_FOCUSED = 1
_COLS_BOX = slice(7, 11)
"""The node columns of its box (x0, y0, x1, y1 as fractions of the screen: :func:`_node_row`)."""
"""The node column of its focused flag (the second of :func:`_node_row`'s features)."""
_COL_USED_APP = 27
"""The node's label names an app used earlier in the episode (the home screen's icon of the first
app of a multi-app task, once the planner has left it): what tells "open the next app" from "open
the app the goal names first". Appended after the first 27 columns so that a planner saved with
27 node columns loads with a zero weight for it
(:func:`navrl.agent.policy.pointer.planner.widen_node_inputs`); so are the columns after it."""
_COL_ORDINAL = 28
"""The goal names this node's place among the nodes of its role: "the 3rd input" flags the third
text field, "the first link" the first link, "the last checkbox" the last check box (issue #28,
focus-text-2). Nodes are counted in the tree's (document) order."""
_COL_TYPE = 29
"""The goal names this node's widget type: "button", "radio", "checkbox", "text"/"input" for a
text field, "textarea" for a multi-line one (the web device's description of a <textarea>) ...
(:data:`_TYPE_WORDS`; issue #28, click-widget: 'Click on a "textarea" widget.')."""
_COL_MEM_ROW = 30
"""The node's label names the first row of an earlier app's screen that the goal picks out
(:func:`goal_rows`): "the first sunny day" read in Weather ("Wed Jun 12" / "Sunny, H:68 L:56")
flags the day "12" of the calendar's date picker (issue #26, multi_weather_picnic: what one app
showed decides where to tap in the next)."""
_COL_GOAL_DAY = 31
"""The node's label is the day of the goal's first date, by value ("2" for "12/02/2016", whose
pieces "02" the label does not match as text), on a screen that shows no month heading or shows
the goal date's month: the day to tap in a date picker once it shows the right month (issue #28,
choose-date: composed values)."""
_COL_GOAL_MONTH = 32
"""The node's label names the month of a date in the goal ("Dec" or "December" for 12/02/2016, or
for "December 2, 2016"): composed values, issue #28."""
_COL_PAGE_TOWARD = 33
"""The node is a pager control ("Next" / "Prev", "›" / "‹" ...: :data:`_FORWARD`, :data:`_BACKWARD`)
that moves a shown month-and-year heading (a month name and a 4-digit year, in one label or in a
node and the next, as a date picker's header shows them) toward the month of the goal's first
date: "Next" while the picker shows an earlier month, "Prev" while it shows a later one (issue #28,
choose-date: which way to page is a comparison of two dates, which attention over word pieces
does not make)."""
_COL_SHOWN_OTHER = 34
"""The node is a month-and-year heading of another month than the goal date's (the day is not
on this page yet)."""
_COL_ENDS_QUOTED = 35
"""The node's label ends with a quoted text of the goal, and is longer (use-autocomplete: 'starts
with "Gua" and ends with "la"' flags "Guatemala", not "Guadeloupe"; issue #28). A label that *is*
the quote, or holds it elsewhere, is what the alignment columns already see. With
``type_on_screen`` only (the MiniWoB++ configs)."""


_COL_SECTION = 36
"""The node is in the section of a text the goal names: after a node without actions whose label
is a phrase of the goal ("@leo" in 'For the user @leo, click on the "Mute" button.'), up to the next
node of its role whose label has the same shape (letters as "a", digits as "0": "@mauris" for
"@leo"), which starts the next section (social-media: the "more" button and its menu of @leo's
post, not another's; issue #28); only a section holding a node with actions (a table's key and
its value cells are none). With ``type_on_screen`` only (the MiniWoB++ configs)."""


def _shape(label: str) -> str:
    return re.sub(r"[a-z]+", "a", re.sub(r"[A-Z]+", "A", re.sub(r"\d+", "0", label.strip())))


def _section_end(nodes: list, j: int) -> int:
    """Where the section that node ``j`` starts ends: the next node of its role whose label has
    the same shape (:func:`_shape`), or the end of the screen."""
    role, shape = nodes[j][0], _shape(str(nodes[j][1]))
    return next((i for i in range(j + 1, len(nodes))
                 if nodes[i][0] == role and _shape(str(nodes[i][1])) == shape), len(nodes))


def _section_column(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_SECTION` of ``nf`` (rows: ``nodes``)."""
    g = norm(goal)
    for j, n in enumerate(nodes):
        lab = norm(str(n[1]))
        if n[5] or len(lab) < 2 or lab == g or not phrase_in(lab, g):
            continue
        k = _section_end(nodes, j)
        if any(nodes[i][5] for i in range(j + 1, k)):    # a section with nothing to act on says nothing
            nf[j + 1:k, _COL_SECTION] = 1.0


_COL_PARITY = 37
"""The node's label is "Odd" or "Even" and a whole number in its row (a text whose box overlaps
its box vertically) is odd or even as it says (odd-or-even: which of a row's two buttons is right
is a property of the number beside them, not a match of words; issue #28, composed values). With
``type_on_screen`` only (the MiniWoB++ configs)."""
_INT = re.compile(r"^[-−]?\d{1,9}$")


def _v_overlap(a, b) -> float:
    """How far two boxes (x0, y0, x1, y1) overlap vertically (<= 0: not at all): a row's test."""
    return min(a[3], b[3]) - max(a[1], b[1])


def _parity_column(nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_PARITY` of ``nf`` (rows: ``nodes``)."""
    says = {i: norm(str(n[1])) for i, n in enumerate(nodes) if norm(str(n[1])) in ("odd", "even")}
    if not says:
        return
    nums = [(int(str(n[1]).strip().replace("−", "-")), n[6]) for n in nodes if _INT.match(str(n[1]).strip())]
    for i, word in says.items():
        b = nodes[i][6]
        for v, nb in nums:
            if _v_overlap(nb, b) > 0 and (v % 2 == 1) == (word == "odd"):
                nf[i, _COL_PARITY] = 1.0
                break


_COL_EXTREME = 38
"""The goal asks for an extreme of a quantity ("the cheapest", "the shortest duration", "the
largest number": :data:`_SUPERLATIVES`) and the node's label holds it among the labels of its role
and shape that hold such a quantity (two or more: "Book for $212" the lowest of four "Book for $0"
buttons, "2h 5m" the shortest of four durations), or the node takes an action and stands in the
section of such a label (after it, before the next label of its role and shape: the "Book for"
button under a ticket's shortest duration). Which of four tickets is cheapest is a comparison of
numbers, which attention over word pieces does not make (buy-ticket; issue #28, composed values).
With ``type_on_screen`` only (the MiniWoB++ configs)."""
_SUPERLATIVES = (        # (the goal's words, the smallest is wanted, the quantity's kind)
    (re.compile(r"\b(?:cheapest|least expensive|lowest (?:price|cost))\b"), True, "money"),
    (re.compile(r"\b(?:most expensive|dearest|highest (?:price|cost))\b"), False, "money"),
    (re.compile(r"\b(?:shortest|quickest|fastest)\b"), True, "time"),
    (re.compile(r"\b(?:longest|slowest)\b"), False, "time"),
    (re.compile(r"\b(?:smallest|lowest|least|fewest|minimum)\b"), True, "number"),
    (re.compile(r"\b(?:largest|biggest|highest|greatest|maximum)\b"), False, "number"),
)
_MONEY = re.compile(r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)")
_DURATION = re.compile(r"^(?:(\d+)\s*h(?:ours?|rs?)?)?\s*(?:(\d+)\s*m(?:in(?:utes?|s)?)?)?$")
_NUMBER = re.compile(r"^[-−]?\d[\d,]*(?:\.\d+)?$")


def _quantity(label: str, kind: str) -> float | None:
    """The quantity of ``kind`` a label holds: a price ("Book for $1,212"), a duration in minutes
    ("5h 23m", "45 min"), or a label that is a number; None where it holds none."""
    lab = label.strip()
    if kind == "money":
        m = _MONEY.search(lab)
        return float(m.group(1).replace(",", "")) if m else None
    if kind == "time":
        m = _DURATION.match(lab.lower())
        return 60.0 * int(m.group(1) or 0) + int(m.group(2) or 0) if m and (m.group(1) or m.group(2)) else None
    return float(lab.replace(",", "").replace("−", "-")) if _NUMBER.match(lab) else None


def _extreme_column(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_EXTREME` of ``nf`` (rows: ``nodes``)."""
    g = goal.lower()
    asked = next(((low, kind) for rx, low, kind in _SUPERLATIVES if rx.search(g)), None)
    if asked is None:
        return
    low, kind = asked
    groups: dict[tuple, list[tuple[float, int]]] = {}
    for i, n in enumerate(nodes):
        v = _quantity(str(n[1]), kind)
        if v is not None:
            groups.setdefault((n[0], _shape(str(n[1]))), []).append((v if low else -v, i))
    for vals in groups.values():
        if len(vals) < 2:
            continue
        best = min(v for v, _ in vals)
        for v, j in vals:
            if v != best:
                continue
            nf[j, _COL_EXTREME] = 1.0
            if nodes[j][5]:
                continue
            for i in range(j + 1, _section_end(nodes, j)):
                if nodes[i][5]:
                    nf[i, _COL_EXTREME] = 1.0


_COL_HIDDEN_BELOW, _COL_HIDDEN_ABOVE = 39, 40
"""A node that scrolls by itself (``UINode.hidden``, which the browser device writes for a text
area or list that scrolls) still hides content toward the end the goal names: below its box where
the goal says "the bottom" / "the end" (the next swipe goes up), above it where it says "the top" /
"the start" (down). How far it is scrolled decides whether to swipe again or go on, and which way
(scroll-text-2: "Scroll the textarea to the bottom of the text area and submit"; sign-agreement;
issue #28). The phone world writes none: zero there."""
_GOAL_END = ((re.compile(r"\b(?:bottom|end)\b"), "below"), (re.compile(r"\b(?:top|start|beginning)\b"), "above"))


def _hidden_columns(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_HIDDEN_BELOW` and :data:`_COL_HIDDEN_ABOVE` of ``nf`` (rows: ``nodes``)."""
    toward = next((side for rx, side in _GOAL_END if rx.search(goal.lower())), None)
    for i, n in enumerate(nodes if toward else ()):
        if len(n) > 8 and toward in str(n[8]).split():
            nf[i, _COL_HIDDEN_BELOW if toward == "below" else _COL_HIDDEN_ABOVE] = 1.0


_COL_GRID_POINT = 41
"""The goal gives a point as "(x,y)" and the node is the one that takes a tap nearest to where the
column of an on-screen label reading x crosses the row of a label reading y (grid-coordinate: the
axes' numbers name a 5 x 5 grid of points; which point is "(2,1)" is a lookup across two axes, as
a table cell is found by its row and column headers, which attention over word pieces does not
make; issue #28). A label may serve both axes ("0" at the origin). With ``type_on_screen`` only
(the MiniWoB++ configs)."""
_POINT = re.compile(r"\(\s*([-−]?\d+)\s*,\s*([-−]?\d+)\s*\)")


def _centre(box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0


def _grid_point_column(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_GRID_POINT` of ``nf`` (rows: ``nodes``)."""
    m = _POINT.search(goal)
    if m is None:
        return
    want = [m.group(k).replace("−", "-") for k in (1, 2)]
    marks = [[_centre(n[6]) for n in nodes if not n[5] and str(n[1]).strip().replace("−", "-") == w] for w in want]
    taps = [i for i, n in enumerate(nodes) if "t" in str(n[5])]
    if not marks[0] or not marks[1] or not taps:
        return
    def off(i: int) -> float:     # how far node i is from the crossing of an x mark's column and a y mark's row
        cx, cy = _centre(nodes[i][6])
        return min(abs(cx - ax) for ax, _ in marks[0]) + min(abs(cy - by) for _, by in marks[1])
    best = min(taps, key=off)
    nf[best, _COL_GRID_POINT] = 1.0


_COL_FITS_DESCRIPTION, _COL_COUNT_ANSWER = 42, 43
"""Drawn things (an ``image`` labelled "large red circle", a letter or digit drawn as text whose
description is its size and colour, "small blue"): :data:`_COL_FITS_DESCRIPTION` flags those that
fit the goal's description of one ("Click on a small green item", "Drag all circles into the black
box", "How many large yellow items are there?": size, colour, then a kind, a shape, a character or
"item"; plurals and MiniWoB's colour and shape synonyms read as the tree names them);
:data:`_COL_COUNT_ANSWER` flags the button whose label is how many fit, where the goal asks "how
many" (click-shape, drag-shapes, count-shape: whether a drawn thing fits three words and how many
do is a conjunction and a count, which attention over word pieces does not make; issue #28). With
``type_on_screen`` only (the MiniWoB++ configs)."""
_DESCRIBED = (re.compile(r"\bhow many (.+?) (?:are|is) there\b"), re.compile(r"\bclick on an? (.+?)\.?$"),
              re.compile(r"\bdrag all (.+?) into\b"))


def _drawn(n: list) -> DrawnThing | None:
    """What a node row draws (:func:`navrl.observation.drawn_thing`), None for another node."""
    return drawn_thing(n[0], str(n[1]), str(n[7]) if len(n) > 7 and n[7] else "")


def _drawn_things_columns(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_FITS_DESCRIPTION` and :data:`_COL_COUNT_ANSWER` of ``nf`` (rows: ``nodes``)."""
    g = goal.strip()
    m = next((m for rx in _DESCRIBED if (m := rx.search(g.lower()))), None)
    if m is None:
        return
    things = [(i, t) for i, n in enumerate(nodes) if n[5] and (t := _drawn(n)) is not None]   # not a drop box
    if not things:
        return
    words = g[m.start(1):m.end(1)].split()            # the goal's own case: "Ks" is not "ks"
    if len(words[-1]) == 2 and words[-1][1] == "s" and words[-1][0].isalnum():
        words[-1] = words[-1][0]                       # "Ks", "7s": a drawn character, plural
    fit = [i for i, t in things if fits_description(t, words)]
    nf[fit, _COL_FITS_DESCRIPTION] = 1.0
    if m.re is _DESCRIBED[0]:
        count = str(len(fit))
        for i, n in enumerate(nodes):
            if n[0] == "button" and str(n[1]).strip() == count:
                nf[i, _COL_COUNT_ANSWER] = 1.0


_COL_NAMES_DRAWN = 44
"""The node is a button whose label names what a drawn thing on the screen is: its shape
("Circle", "Rectangle" for MiniWoB's square), "Letter" or "Number" for a drawn character
(identify-shape: "Click the button that best describes the figure below"; a digit is a "Number",
which no word of the screen says; issue #28). With ``type_on_screen`` only (the MiniWoB++ configs)."""
_CATEGORY = {"digit": ("number", "digit"), "letter": ("letter",), "shape": ("shape",)}


def _names_drawn_column(nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_NAMES_DRAWN` of ``nf`` (rows: ``nodes``)."""
    names: set[str] = set()
    for n in nodes:
        t = _drawn(n)
        if t is not None:
            names.update(_CATEGORY[t.type])
            if t.type == "shape":
                names.add(t.what)
    if not names:
        return
    for i, n in enumerate(nodes):
        if n[0] == "button" and SAME_KIND.get(w := str(n[1]).strip().lower(), w) in names:
            nf[i, _COL_NAMES_DRAWN] = 1.0


_COL_MEETS_CONDITION = 45
"""The node's label is a whole number that meets the goal's condition on a number ("a number less
than 5", "greater than 4", "an even number", "an odd number"): generate-number asks to press
Generate until the shown number meets it, then Submit; whether 7 is less than 5 is a comparison of
numbers, which attention over word pieces does not make (issue #28). With ``type_on_screen`` only
(the MiniWoB++ configs)."""
_CONDITION = re.compile(r"\bnumbers? (?:that is |which is )?(less|greater|smaller|larger|more) than ([-−]?\d+)")
_PARITY_GOAL = re.compile(r"\ban? (odd|even) number\b")


def _meets_condition_column(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_MEETS_CONDITION` of ``nf`` (rows: ``nodes``)."""
    g = goal.lower()
    m, p = _CONDITION.search(g), _PARITY_GOAL.search(g)
    if m is None and p is None:
        return
    for i, n in enumerate(nodes):
        lab = str(n[1]).strip().replace("−", "-")
        if not _INT.match(lab):
            continue
        v = int(lab)
        if m is not None:
            bound = int(m.group(2).replace("−", "-"))
            ok = v < bound if m.group(1) in ("less", "smaller") else v > bound
        else:
            ok = (v % 2 == 1) == (p.group(1) == "odd")
        if ok:
            nf[i, _COL_MEETS_CONDITION] = 1.0


@lru_cache(maxsize=20_000)
def goal_quotes(goal: str) -> tuple[str, ...]:
    """The goal's quoted texts, lower-cased."""
    return tuple(m.group(1).strip().lower() for m in _QUOTED.finditer(goal) if m.group(1).strip())


def _ends_quoted_column(goal: str, nodes: list, nf: np.ndarray) -> None:
    """Fill :data:`_COL_ENDS_QUOTED` of ``nf`` (rows: ``nodes``)."""
    ends = goal_quotes(goal)
    for i, n in enumerate(nodes if ends else ()):
        lab = str(n[1]).strip().lower()
        nf[i, _COL_ENDS_QUOTED] = float(any(len(lab) > len(e) and lab.endswith(e) for e in ends))


_FORWARD = frozenset({"next", "next month", ">", "\u203a", "\u00bb", "\u2192", "forward"})
_BACKWARD = frozenset({"prev", "previous", "prev month", "previous month", "<", "\u2039", "\u00ab", "\u2190"})
_TYPE_WORDS = {"button": ("button",), "link": ("link",), "checkbox": ("checkbox",), "radio": ("radio",),
               "textfield": ("text", "input", "textbox", "field"), "combobox": ("select", "dropdown"),
               "slider": ("slider",), "switch": ("switch", "toggle"), "tab": ("tab",), "option": ("option",),
               "image": ("image", "picture"), "menuitem": ("menu",)}
_DESC_TYPE_WORDS = {"textarea": ("textarea",)}
"""A node's description that names its type more precisely than its role (replacing the role's words)."""


def _names_type(goal_words: frozenset, role: str, desc: str) -> float:
    words = _DESC_TYPE_WORDS.get(desc) or _TYPE_WORDS.get(role, ())
    return float(any(w in goal_words for w in words))


_ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
                  "eighth": 8, "ninth": 9, "tenth": 10, "last": -1}
_ORDINAL = re.compile(r"(?<![a-z0-9])(?:(\d{1,2})(?:st|nd|rd|th)|(" + "|".join(_ORDINAL_WORDS) + r"))(?![a-z0-9])")


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH_OF = {**{m: i + 1 for i, m in enumerate(_MONTHS)}, **{m[:3]: i + 1 for i, m in enumerate(_MONTHS)},
             "sept": 9}
_DATE_NUM = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])")
_DATE_TEXT = re.compile(r"(?<![a-z])(" + "|".join(m[:3] for m in _MONTHS) + r")[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+"
                        r"(\d{4})(?!\d)")
_HEADING = re.compile(r"^\s*([a-z]+)\.?(?:\s+(\d{4}))?\s*$")


@lru_cache(maxsize=20_000)
def goal_dates(goal: str) -> tuple[tuple[int, int, int], ...]:
    """The dates the goal writes, as (year, month, day), in order: "12/02/2016" (month first, as
    US forms and MiniWoB++ write it) and "December 2, 2016" / "Dec 2nd 2016"."""
    low = goal.lower()
    found = [(m.start(), (int(m.group(3)), int(m.group(1)), int(m.group(2)))) for m in _DATE_NUM.finditer(low)]
    found += [(m.start(), (int(m.group(3)), _MONTH_OF[m.group(1)], int(m.group(2)))) for m in _DATE_TEXT.finditer(low)]
    return tuple(d for _, d in sorted(found) if 1 <= d[1] <= 12 and 1 <= d[2] <= 31)


def _date_columns(goal: str, labels: list[str], nf: np.ndarray) -> None:
    """Fill the goal-day, goal-month and heading columns of ``nf`` (rows: ``labels``) when the
    goal writes a date."""
    dates = goal_dates(goal)
    if not dates:
        return
    months = {d[1] for d in dates}
    first = dates[0][:2]
    days, forward, backward = [], [], []
    way = 0                       # +1: a shown heading is before the goal's month, -1: after it
    for i, lab in enumerate(labels):
        t = lab.strip()
        low = t.lower()
        if t.isdigit() and len(t) <= 2 and int(t) == dates[0][2]:
            days.append(i)
        if low in _FORWARD:
            forward.append(i)
        elif low in _BACKWARD:
            backward.append(i)
        m = _HEADING.match(low)
        month = _MONTH_OF.get(m.group(1)) if m else None
        if month is None:
            continue
        if month in months:
            nf[i, _COL_GOAL_MONTH] = 1.0
        year = m.group(2)
        rows = [i]
        if year is None and i + 1 < len(labels) and re.fullmatch(r"\d{4}", labels[i + 1].strip()):
            year, rows = labels[i + 1].strip(), [i, i + 1]
        if year is not None and (int(year), month) != first:
            nf[rows, _COL_SHOWN_OTHER] = 1.0
            way = way or (1 if (int(year), month) < first else -1)
    if way:
        nf[forward if way > 0 else backward, _COL_PAGE_TOWARD] = 1.0
    elif days:                    # the goal's month shows (or no heading): its day
        nf[days, _COL_GOAL_DAY] = 1.0


@lru_cache(maxsize=20_000)
def goal_ordinals(goal: str) -> tuple[int, ...]:
    """The places the goal names, in order: "the 3rd input" -> (3,), "first ... second" -> (1, 2);
    "last" is -1."""
    return tuple(int(m.group(1)) if m.group(1) else _ORDINAL_WORDS[m.group(2)] for m in _ORDINAL.finditer(goal.lower()))


_ROLE_OF_WORD = {w: role for role, words in _TYPE_WORDS.items() for w in words}


@lru_cache(maxsize=20_000)
def goal_ordinal_roles(goal: str) -> tuple[str | None, ...]:
    """For each of :func:`goal_ordinals`, the role its next two words name ("the 3rd radio button"
    -> "radio", "the 2nd textbox" -> "textfield", :data:`_TYPE_WORDS`), None where they name none
    ("the second word")."""
    g = goal.lower()
    out = []
    for m in _ORDINAL.finditer(g):
        after = re.findall(r"[a-z]+", g[m.end():])[:2]
        out.append(next((_ROLE_OF_WORD[w] for w in after if w in _ROLE_OF_WORD), None))
    return tuple(out)


def _ordinal_rows(ordinals: tuple[int, ...], roles: list[int], named: tuple[str | None, ...] = ()) -> list[int]:
    """The nodes that are the k-th (or the last, k = -1) of their role for some k of ``ordinals``;
    of the role ``named`` gives for it where it gives one (a goal that says "the 1st radio button
    and the 2nd textbox" flags the first radio button and the second text field, not the second
    radio button: form-sequence-2, issue #28)."""
    by_role: dict[int, list[int]] = {}
    for i, r in enumerate(roles):
        by_role.setdefault(r, []).append(i)
    out = set()
    for k, role in itertools.zip_longest(ordinals, named[:len(ordinals)]):
        if k == 0:
            continue
        for r, same in by_role.items():
            if (role is None or ROLES[r] == role) and (k <= len(same) if k > 0 else True):
                out.add(same[k - 1 if k > 0 else k])
    return sorted(out)


def _screen(goal: str, ans_texts: tuple, app: str, nodes: list, vocab: Vocab) -> _Screen:
    ids = vocab.ids()
    gp = pieces(goal)
    quoted = [(m.start(1), m.end(1)) for m in _QUOTED.finditer(goal)]
    ctx_src: list[tuple[int, str, list[Piece]]] = [(0, goal, gp)] + [(1, a, pieces(a)) for a in ans_texts]
    screen_text = " ".join(str(n[1]) + " " + str(n[2]) for n in nodes)
    screen_keys = content_keys(pieces(screen_text))
    ctx_ids, ctx_seg, ctx_pos, ctx_feats, ctx_key = [], [], [], [], []
    ctx_rows: list[tuple[int, int, int]] = []        # (source index, first row, n pieces)
    for si, (seg, s, ps) in enumerate(ctx_src):
        room = MAX_CTX - len(ctx_ids)
        ps = ps[:max(0, room)]
        ctx_rows.append((si, len(ctx_ids), len(ps)))
        for k, p in enumerate(ps):
            inq = any(a <= p.start and p.end <= b for a, b in quoted)
            ctx_ids.append(ids(p))
            ctx_seg.append(seg)
            ctx_pos.append(min(k, 63))
            ctx_key.append(p.key)
            ctx_feats.append([float(p.is_number), float(p.key in vocab.index), float(inq),
                              float(p.key in screen_keys), float(p.key in STOPWORDS), float(seg == 1)])
    ctx_rows_of: dict[str, list[int]] = {}
    for c, key in enumerate(ctx_key):
        ctx_rows_of.setdefault(key, []).append(c)
    ans_all = " ".join(ans_texts)
    index = vocab.index
    ents: dict[str, int] = {}

    def local(ps) -> list[int]:
        out = []
        for p in ps:
            i = index.get(p.key)
            if i is None:
                i = -1 - ents.setdefault(p.key, len(ents))
            out.append(i)
        return out

    node_role, label_ids, label_n, value_ids, value_n, node_feats, node_labels, node_accept = [], [], [], [], [], [], [], []
    match_ctx, scr_ids, scr_node, scr_pos = [], [], [], []
    label_rows: dict[str, list[int]] = {}
    texts: list[tuple[str, str]] = []
    has_focus = False
    app_l = app.lower()
    goal_words = frozenset(w.lower() for w in re.findall(r"[A-Za-z]+", goal))
    memo = vocab._nodes
    for i, n in enumerate(nodes[:MAX_NODES]):
        role, label, value, enabled, focused, acts, b, *more = n
        try:
            key = (goal, ans_texts, str(role), str(label), str(value), enabled, focused, acts, *b)
            row = memo.get(key)
        except TypeError:   # an unhashable field (not a prompt context_prompt writes): no memo
            key, row = None, None
        if row is None:
            row = _node_row(role, str(label), str(value), enabled, focused, acts, b, goal, ans_all, ctx_rows_of, vocab)
            if key is not None:
                memo.put(key, row)
        role_id, label, value, lp, vp, lab_n, f, cols, acc = row
        node_role.append(role_id)
        lids, vids = local(lp), local(vp)
        label_ids += lids
        label_n.append(len(lids))
        value_ids += vids
        value_n.append(len(vids))
        node_labels.append(label)
        has_focus |= bool(focused)
        if lab_n:
            label_rows.setdefault(lab_n, []).append(i)
        node_feats.append(f + (0.0, 0.0, min(i, 95) / 95.0, float(app_l == lab_n), 0.0, 0.0,
                               _names_type(goal_words, str(role), str(more[0]) if more else ""), 0.0,
                               0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
        match_ctx.extend((i, c) for c in cols)
        node_accept.append(acc)
        # on-screen text pieces and their candidate spans (answers are read off the screen)
        scr_ids += lids + vids
        scr_node += [i] * (len(lids) + len(vids))
        scr_pos += _SCR_POS[:len(lids)] + _SCR_POS[:len(vids)]
        texts.append((label, value))
    # --- text candidates: on screen, then the goal's and answers', then the fixed answers
    scr_row0 = len(ctx_ids)   # screen-piece rows follow the context rows in the reference table
    screen = _screen_block(tuple(texts))
    if vocab.type_on_screen:     # what the page shows can be typed (MiniWoB's read-table, copy-paste)
        screen = dataclasses.replace(screen, use=np.concatenate([np.ones((len(screen.text), 1), bool),
                                                                 screen.use[:, 1:]], axis=1))
    blocks = [(screen, scr_row0)]
    for si, r0, n in ctx_rows:
        seg, s, _ = ctx_src[si]
        blocks.append((_ctx_block(seg, s, n), r0))
    blocks.append((_fixed_block(), scr_row0 + len(scr_ids)))
    case = goal_case(goal)
    if case is not None and ctx_rows[0][2]:    # after every other candidate: their indices stay
        blocks.append((_case_block(goal, ctx_rows[0][2], case), ctx_rows[0][1]))
    if vocab.type_on_screen:                   # after every other candidate too
        blocks.append((_whole_values_block(tuple(texts)), scr_row0))
        blocks.append((_computed_block(tuple(texts), goal), scr_row0))
    cb = _join_cands(blocks)
    if vocab.type_on_screen and has_focus:     # a column of goal spans: zero elsewhere
        _named_by_field_column(gp, ctx_rows[0], cb, nodes[:MAX_NODES], goal)
    if vocab.type_on_screen:                   # a column of a table's values: zero elsewhere
        _keyed_value_column(cb, nodes[:MAX_NODES], goal)
    nf = np.asarray(node_feats, np.float32).reshape(-1, NODE_FEATS)
    ordinals = goal_ordinals(goal)
    if ordinals:
        nf[_ordinal_rows(ordinals, node_role, goal_ordinal_roles(goal)), _COL_ORDINAL] = 1.0
    if DATE_COLUMNS and any(c.isdigit() for c in goal):     # (a date has digits)
        _date_columns(goal, [str(n[1]) for n in nodes[:MAX_NODES]], nf)
    if vocab.type_on_screen:                   # the MiniWoB++ pages' node columns
        shown = nodes[:MAX_NODES]
        _section_column(goal, shown, nf)
        _parity_column(shown, nf)
        _ends_quoted_column(goal, shown, nf)
        _extreme_column(goal, shown, nf)
        _grid_point_column(goal, shown, nf)
        _drawn_things_columns(goal, shown, nf)
        _names_drawn_column(shown, nf)
        _meets_condition_column(goal, shown, nf)
    _hidden_columns(goal, nodes[:MAX_NODES], nf)
    accept = np.asarray(node_accept, bool).reshape(-1, K)
    kind_mask = np.ones(K, bool)
    for kname in NODE_KINDS:
        kind_mask[KIND_ID[kname]] = bool(accept[:, KIND_ID[kname]].any())
    kind_mask[KIND_ID["ask"]] = bool(cb.use[:, 2].any())
    i64 = np.int64
    return _Screen(
        np.asarray(ctx_ids, i64), np.asarray(ctx_seg, i64), np.asarray(ctx_pos, i64),
        np.asarray(ctx_feats, np.float32).reshape(-1, CTX_FEATS), dict(ids.ph),
        np.asarray(node_role, i64), np.asarray(label_ids, i64), np.asarray(label_n, i64), np.asarray(value_ids, i64),
        np.asarray(value_n, i64),
        nf, node_labels, accept,
        np.asarray(match_ctx, i64).reshape(-1, 2), np.asarray(scr_ids, i64), np.asarray(scr_node, i64),
        np.asarray(scr_pos, i64), tuple(ents), {k: np.asarray(v, i64) for k, v in label_rows.items()},
        frozenset(norm(str(n[1])) for n in nodes), has_focus, len(nodes), kind_mask, cb)


def _node_row(role, label: str, value: str, enabled, focused, acts, b, goal: str, ans_all: str,
              ctx_rows_of: dict[str, list[int]], vocab: Vocab) -> tuple:
    """What a node contributes to its screen's encoding that depends on the node, the goal
    and the answers only: role id, label, value, their pieces, normalised label, the first
    23 features (flags, box, alignment), the goal/answer rows it matches, the kinds it accepts."""
    lp, vp = pieces(label)[:MAX_NODE_PIECES], pieces(value)[:MAX_NODE_PIECES]
    x0, y0, x1, y1 = (float(v) for v in b)
    f = [float(enabled), float(focused), float(bool(value)), float("t" in acts), float("l" in acts),
         float("s" in acts), float(not label), x0, y0, x1, y1, (x0 + x1) / 2, (y0 + y1) / 2,
         min(len(lp), 12) / 12.0]
    f += vocab.node_alignment(label, value, goal, ans_all)
    assert len(f) == _NODE_BASE_FEATS, len(f)   # the history columns are placed after these
    # look the node's few keys up instead of scanning the goal
    cols = tuple(sorted(c for k in _node_keys(label, value) for c in ctx_rows_of.get(k, ())))
    acc = [False] * K
    for kname, need in NODE_KINDS.items():
        acc[KIND_ID[kname]] = bool(label) and need[0] in acts and bool(enabled)
    return ROLE_ID.get(str(role), 0), label, value, lp, vp, norm(label), tuple(f), cols, acc


def _encode(goal: str, answers, hist, app: str, t: int, nodes, seen, nodes_json: str, vocab: Vocab,
            used: tuple[str, ...] = (), kinds: tuple[str, ...] = ()) -> Encoded:
    # episode memory (texts of the earlier apps' last screens) joins the answers: facts the
    # episode has learnt that the goal does not state; only texts with an entity or a number
    ans_texts = tuple([str(a) for _, a in answers]) + (vocab.facts(tuple(seen)) if seen else ())
    key = (nodes_json, app, goal, ans_texts)
    sc = vocab._screens.get(key)
    if sc is None:
        sc = vocab._screens.put(key, _screen(goal, ans_texts, app, nodes, vocab))
    # --- history: the last steps' kinds and targets (their entities take placeholders after
    # the goal's and answers', before the nodes')
    ph = dict(sc.ctx_ph)
    size = vocab.size
    steps = [str(s) for s in hist]
    hs = steps[-MAX_HIST:]
    hist_kind, words, n_words, hist_feats, hist_targets = [], [], [], [], []
    for j, step in enumerate(hs):
        k, ids, has_ent, tn, has_tgt = vocab.step_row(step)
        hist_kind.append(k)
        words += [i if type(i) is int else size + _slot(ph, i) for i in ids] if has_ent else ids
        n_words.append(len(ids))
        hist_targets.append(tn)
        hist_feats += (float(tn in sc.labels_now and has_tgt), min(steps.count(step), 4) / 4.0, (len(hs) - j) / MAX_HIST)
    # --- the nodes' entities: placeholders in order of first appearance, after those taken
    # (by the goal and answers, then the history: the entities the history added decide them)
    added = tuple(ph)[len(sc.ctx_ph):]
    res = sc.resolved.get(added)
    if res is None:
        if sc.ents:
            ent = np.fromiter((size + _slot(ph, key_) for key_ in sc.ents), np.int64, len(sc.ents))

            def rs(a: np.ndarray) -> np.ndarray:
                return np.where(a < 0, ent[np.maximum(-a - 1, 0)], a)
            res = (rs(sc.node_label), rs(sc.node_value), rs(sc.scr_ids))
        else:
            res = (sc.node_label, sc.node_value, sc.scr_ids)
        if len(sc.resolved) >= 64:
            sc.resolved.clear()
        sc.resolved[added] = res
    # --- the history's columns of the nodes: a node whose label is a step's target
    node_feats, match_hist = sc.node_feats, ()
    if any(hist_targets):
        pairs = sorted((i, k) for k, tg in enumerate(hist_targets) if tg for i in sc.label_rows.get(tg, ()))
        if pairs:
            node_feats = node_feats.copy()
            match_hist = tuple(pairs)
            node_feats[[i for i, _ in pairs], _COL_IN_HIST] = 1.0
            last = sc.label_rows.get(hist_targets[-1]) if hist_targets[-1] else None
            if last is not None:
                node_feats[last, _COL_LAST] = 1.0
    # --- the nodes that name the earlier app's row the goal picks out
    if seen:
        for row in goal_rows(goal, tuple(seen)):     # the first such row that names a node here
            rows = [i for lab, rr in sc.label_rows.items() if lab and phrase_in(lab, row) for i in rr]
            if rows:
                node_feats = node_feats.copy() if node_feats is sc.node_feats else node_feats
                node_feats[rows, _COL_MEM_ROW] = 1.0
                break
    # --- the nodes that name an app the episode used before this screen
    if used:
        rows = [i for a in used for i in sc.label_rows.get(norm(a), ())]
        if rows:
            node_feats = node_feats.copy() if node_feats is sc.node_feats else node_feats
            node_feats[rows, _COL_USED_APP] = 1.0
    glob = np.array((min(t, 30) / 30.0, float(sc.has_focus), float(bool(answers)), float(not app),
                     min(sc.n_all, 96) / 96.0), np.float32)
    cb = sc.cands
    kind_mask = sc.kind_mask
    if kinds:     # the world's action space: its other kinds are no legal decision
        kind_mask = sc.kind_mask & step_kinds_mask(kinds)
        if not kind_mask.any():   # nothing of the world's kinds acts on this screen: as without
            kind_mask = sc.kind_mask
    return Encoded(goal, sc.ctx_ids, sc.ctx_seg, sc.ctx_pos, sc.ctx_feats, tuple(hist_kind), tuple(words),
                   tuple(n_words), tuple(hist_feats), glob, sc.node_role, res[0], sc.node_label_n, res[1],
                   sc.node_value_n, node_feats, sc.node_labels,
                   sc.node_accept, sc.match_ctx, match_hist, res[2], sc.scr_node, sc.scr_pos, kind_mask, cb.text,
                   cb.src, cb.a, cb.b, cb.feats, cb.use)




@lru_cache(maxsize=20_000)
def goal_rows(goal: str, seen: tuple[str, ...]) -> tuple[str, ...]:
    """The rows of the episode memory that the goal picks out, in order, normalised: memory
    holds an earlier screen's texts in order, a list row's label before its value ("Wed Jun 12",
    "Sunny, H:68 L:56"); a row is picked out when the text after its label shares a content word
    with the goal without being a phrase of it (a value the goal describes, not one it names:
    "London" after "Back" is the goal's city). The node column flags the nodes of the current
    screen named in the first of them that names any."""
    keys = content_keys(pieces(goal))
    g = norm(goal)
    return tuple(norm(label) for label, value in zip(seen, seen[1:])
                 if content_keys(pieces(value)) & keys and not phrase_in(norm(value), g))


VERBATIM_QUOTES = True
"""A quoted text of the goal that no span renders is a candidate of its own (:func:`_ctx_cands`).
Off only to compare with planners from before these candidates (f0ad593's decisions in
``tests/agent/test_pointer_reference.py``; the memos must be emptied after changing it)."""


@lru_cache(maxsize=20_000)
def _ctx_cands(seg: int, s: str, n: int) -> tuple[tuple[int, int, str, tuple, tuple], ...]:
    """Text candidates of the goal (``seg`` 0) or an answer (1), over its first ``n`` pieces."""
    ps = pieces(s)[:n]
    quoted = [(m.start(1), m.end(1)) for m in _QUOTED.finditer(s)] if seg == 0 else []
    out = []
    for a, b in spans(ps, MAX_SPAN_CTX):
        txt = span_text(s, ps, a, b)
        q = any(ps[a].start == qa and ps[b].end == qb for qa, qb in quoted)
        out.append((a, b, txt, tuple(_cand_feats(seg, txt, ps, a, b, q)), (True, _answerable(txt), seg == 0)))
    # a quoted text of the goal no span renders (it ends on a space or a dash: "titled "Drive
    # to Home - " followed by the drive time") is typed verbatim, to be continued by a
    # second Type (issue #26: a value composed of the goal's words and what an app showed)
    have = {c[2] for c in out}
    for qa, qb in quoted if VERBATIM_QUOTES else ():
        txt = s[qa:qb]
        inside = [i for i, p in enumerate(ps) if qa <= p.start and p.end <= qb]
        if txt in have or not inside or not txt.strip():
            continue
        have.add(txt)
        a, b = inside[0], inside[-1]
        out.append((a, b, txt, tuple(_cand_feats(seg, txt, ps, a, b, True)), (True, False, True)))
    return tuple(out)


def _answerable(txt: str) -> bool:
    # "Complete: <answer>" loses a trailing full stop when parsed: such a span would not round-trip
    return not txt.endswith(".")


def _cand_feats(src: int, txt: str, ps: list[Piece], a: int, b: int, quoted: bool) -> list[float]:
    n = b - a + 1
    whole = float(a == 0 and b == len(ps) - 1) if ps else 1.0
    numeric = float(bool(re.fullmatch(r"[\d\s.,:$%-]+", txt)))
    return [float(src == 0), float(src == 1), float(src == 2), float(src == 3), float(src == 4), whole,
            float(quoted), min(n, 16) / 16.0, numeric, float(txt[:1] == "$"),
            float(any(c.isalpha() for c in txt)), float(txt[-1:] in ".!?")] + boundary_features(ps, a, b) + [0.0] * (CAND_FEATS - _COL_CASE)


_COL_CASE = 16
"""The last candidate column: the candidate is a goal span in the case the goal asks for ("Type
"Kasey" in all upper case letters" -> ``KASEY``; issue #28, enter-text-2). Such twins follow
every other candidate, exist only where the goal names a case (:func:`goal_case`) and the span
changes, and can only be typed. Appended with a zero weight after the first 16 columns (the
model puts it after the kind's one-hot: :data:`navrl.agent.policy.pointer.model.CAND_FEATS_FIRST`),
so saved planners load and decide as before."""

_COL_COMPUTED = 17
"""A candidate column: the candidate is a value computed from what the screen shows, not a span
of it (:func:`_computed_block`): the result of "3 + 8 =", the x of "x - 3 = 5", the characters
of single-character text nodes joined (issue #28, composed values: simple-arithmetic,
simple-algebra, text-transform) and the word of a text at the place the goal names ("the 4th
word in the paragraph", its letters: find-word; "the last word in the text area": scroll-text). Appended with a zero weight (``CAND_COLUMNS_ADDED``)."""

_ARITH = re.compile(r"^\s*(-?\d{1,6})\s*([-+x\u00d7*])\s*(-?\d{1,6})\s*=\s*\??\s*$")
_ALGEBRA = re.compile(r"^\s*(x|-?\d{1,6})\s*([-+])\s*(x|-?\d{1,6})\s*=\s*(-?\d{1,6})\s*$")


def _computed(label: str) -> str | None:
    """The value a label asks to compute: "3 + 8 =" -> "11", "x - 3 = 5" -> "8", else None."""
    m = _ARITH.match(label)
    if m:
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        return str(a + b if op == "+" else a - b if op == "-" else a * b)
    m = _ALGEBRA.match(label)
    if m and (m.group(1) == "x") != (m.group(3) == "x"):
        left, op, right, rhs = m.group(1), m.group(2), m.group(3), int(m.group(4))
        d = int(right if left == "x" else left)
        return str(rhs - d if op == "+" else rhs + d if left == "x" else d - rhs)
    return None


_WORD_GOAL = re.compile(r"(?<![a-z])word(?![a-z])")


@lru_cache(maxsize=20_000)
def _computed_block(texts: tuple[tuple[str, str], ...], goal: str) -> _Cands:
    """Typable candidates computed from the screen's labels (:data:`_COL_COMPUTED`), their
    reference rows the pieces they are computed from; rows counted as :func:`_screen_block`
    counts them."""
    rows, row = [], 0
    places = [k for k in goal_ordinals(goal) if k != 0] if _WORD_GOAL.search(goal.lower()) else []
    run: list[tuple[int, str]] = []          # consecutive single-character labels: (row, character)

    def flush() -> None:
        if len(run) >= 3:
            txt = "".join(c for _, c in run)
            rows.append((run[0][0], run[-1][0], txt, _computed_feats(txt), (True, True, False)))
        run.clear()
    for label, value in texts:
        lp, vp = pieces(label)[:MAX_NODE_PIECES], pieces(value)[:MAX_NODE_PIECES]
        lab = label.strip()
        if len(lab) == 1 and lab.isalnum() and lp:
            run.append((row, lab))
        else:
            flush()
            val = _computed(label)
            if val is not None and lp:
                rows.append((row, row + len(lp) - 1, val, _computed_feats(val), (True, True, False)))
            # "the 4th word in the paragraph", "the last word in the text area" (a field's value):
            # its letters and digits, referring to the label's or the value's pieces; a text of
            # three words or more (not a control's name: "text field" has a last word too)
            for text, r0, n in ((label, row, len(lp)), (value, row + len(lp), len(vp))):
                words = text.split() if places and n and text.strip() != goal.strip() else []
                for k in places:
                    w = re.sub(r"[^A-Za-z0-9]", "", words[k - 1 if k > 0 else k]) \
                        if 3 <= len(words) and k <= len(words) else ""
                    if w:
                        rows.append((r0, r0 + n - 1, w, _computed_feats(w), (True, True, False)))
        row += len(lp) + len(vp)
    flush()
    return _Cands.of(2, tuple(rows))


def _computed_feats(txt: str) -> tuple:
    f = _cand_feats(2, txt, [], 0, 0, quoted=False)
    f[_COL_COMPUTED] = 1.0
    return tuple(f)


_COL_NAMED_BY_FIELD = 18
"""A candidate column: the goal span stands beside a goal word that names the focused field
(issue #28: multi-orderings, multi-layouts). A field is named by its own label and by the text
nearest to it on the screen (above, below, left or right: where a form puts its labels);
"directed by Mejia" into the field beside "Director", "from year 2017" into the one beside
"Year": the content word before the span (up to three pieces back) shares its first five
letters (all of a shorter one's, three at least) with a word of the field's names. Every
candidate typing such a span's text is flagged (the instruction's span on the screen too). With ``type_on_screen``
only (the MiniWoB++ configs); appended with a zero weight (``CAND_COLUMNS_ADDED``)."""


def _same_stem(a: str, b: str) -> bool:
    k = min(5, len(a), len(b))
    return k >= 3 and a[:k] == b[:k]


def _field_names(nodes: list, goal: str) -> set[str]:
    """The content words naming the focused node: its label's and those of the text node
    nearest its box (by the gap between the boxes, the instruction itself left out)."""
    f = next(i for i, n in enumerate(nodes) if n[4])
    fb = nodes[f][6]
    best, gap = None, 0.12            # a label farther than this (screen fractions) names nothing
    for i, n in enumerate(nodes):
        if i == f or str(n[0]) != "text" or str(n[1]).strip() in ("", goal.strip()):
            continue
        b = n[6]
        d = max(0.0, b[0] - fb[2], fb[0] - b[2]) + max(0.0, b[1] - fb[3], fb[1] - b[3])
        if d < gap:
            best, gap = str(n[1]), d
    names = content_keys(pieces(str(nodes[f][1])))
    return names | content_keys(pieces(best)) if best else names


def _named_by_field_column(gp: list[Piece], goal_rows: tuple[int, int, int], cb: "_Cands", nodes: list,
                           goal: str) -> None:
    """Set :data:`_COL_NAMED_BY_FIELD` of ``cb``'s goal spans (source 0) in place."""
    names = [k for k in _field_names(nodes, goal) if not k.isdigit()]
    if not names:
        return
    _, r0, n = goal_rows

    def cue(at: int, step: int) -> bool:          # the first content word from ``at`` on names the field
        for k in range(at, at + 3 * step, step):  # (after a span it would as often name the next field)
            if not 0 <= k < n:
                return False
            p = gp[k]
            if p.is_word and p.key not in STOPWORDS:
                return any(_same_stem(p.key, w) for w in names)
        return False
    named = set()
    for j in np.flatnonzero(cb.src == 0):
        a, b = int(cb.a[j]) - r0, int(cb.b[j]) - r0
        if 0 <= a <= b < n and cue(a - 1, -1):
            named.add(cb.text[j])
    # every candidate that types the same text (the instruction's own span on the screen, which a
    # demonstration's Type decides for first)
    for j, t in enumerate(cb.text):
        if t in named:
            cb.feats[j, _COL_NAMED_BY_FIELD] = 1.0


_COL_KEYED_VALUE = 19
"""A candidate column: the text is a table row's value whose key the focused field or the goal
names (issue #28: read-table types "the value of Last name", read-table-2 fills the field labelled
"Gender" with the value beside "Gender"). A row is the text nodes whose boxes overlap vertically;
its key is the leftmost, its values the others. A key is named by the focused field's label (the
whole label, case and spaces aside) or, failing that, by the goal (the key's words in order,
bounded by non-letters). Every candidate typing a flagged value's whole text is flagged. With
``type_on_screen`` only (the MiniWoB++ configs); appended with a zero weight
(``CAND_COLUMNS_ADDED``)."""


def _table_rows(nodes: list, goal: str) -> list[tuple[str, list[str]]]:
    """(key, values) of each row of two or more text nodes, top to bottom; the instruction left out."""
    texts = [n for n in nodes if str(n[0]) == "text" and str(n[1]).strip() not in ("", goal.strip())]
    rows: list[list] = []
    for n in sorted(texts, key=lambda n: (n[6][1], n[6][0])):
        b = n[6]
        for row in rows:
            r = row[0][6]
            if _v_overlap(b, r) > 0.5 * min(b[3] - b[1], r[3] - r[1]):
                row.append(n)
                break
        else:
            rows.append([n])
    out = []
    for row in rows:
        if len(row) >= 2:
            row.sort(key=lambda n: n[6][0])
            out.append((str(row[0][1]), [str(n[1]) for n in row[1:]]))
    return out


def _keyed_value_column(cb: "_Cands", nodes: list, goal: str) -> None:
    """Set :data:`_COL_KEYED_VALUE` of ``cb``'s candidates in place."""
    rows = _table_rows(nodes, goal)
    if not rows:
        return
    focused = next((norm(str(n[1])) for n in nodes if n[4]), None)
    named = [vals for key, vals in rows if focused and norm(key) == focused]
    if not named:
        g = norm(goal)
        named = [vals for key, vals in rows
                 if norm(key) and re.search(r"(?<![a-z])" + re.escape(norm(key)) + r"(?![a-z])", g)]
    flag = {v.strip() for vals in named for v in vals}
    for j, t in enumerate(cb.text):
        if t.strip() in flag:
            cb.feats[j, _COL_KEYED_VALUE] = 1.0


_CASE = re.compile(r"(?<![a-z])(upper|lower)[ -]?case(?![a-z])|(?<![a-z])(capital letters|all caps)(?![a-z])")


@lru_cache(maxsize=20_000)
def goal_case(goal: str) -> str | None:
    """``"upper"`` or ``"lower"`` where the goal asks for text in that case (its first mention),
    else None."""
    m = _CASE.search(goal.lower())
    if m is None:
        return None
    return m.group(1) or "upper"


@lru_cache(maxsize=20_000)
def _case_block(goal: str, n: int, case: str) -> _Cands:
    """The typable spans of the goal's first ``n`` pieces in ``case``, where that changes them."""
    rows = []
    for a, b, txt, feats, use in _ctx_cands(0, goal, n):
        twin = txt.upper() if case == "upper" else txt.lower()
        if use[0] and twin != txt:
            rows.append((a, b, twin, feats[:_COL_CASE] + (1.0,) + (0.0,) * (CAND_FEATS - _COL_CASE - 1), (True, False, False)))
    return _Cands.of(0, tuple(rows))


# ---------------------------------------------------------------------------- decisions
@dataclass(frozen=True)
class Decision:
    """kind index; ``arg`` a node index or a candidate index (or -1); ``frame`` the question
    frame of an ask, or a drag's destination (:data:`DRAG_DIRECTIONS`)."""
    kind: int
    arg: int = -1
    frame: int = -1

    def ids(self) -> list[int]:
        out = [self.kind]
        if self.arg >= 0:
            out.append(self.arg)
        if self.frame >= 0:
            out.append(self.frame)
        return out

    @staticmethod
    def from_ids(ids: list[int]) -> "Decision":
        return Decision(ids[0], ids[1] if len(ids) > 1 else -1, ids[2] if len(ids) > 2 else -1)


def _q(s: str) -> str:
    return '"' + s.replace('"', "'") + '"'


def render_step(d: Decision, e: Encoded, frames: list[str]) -> str:
    """The Step line of a decision (docs/design.md §3 forms)."""
    k = KINDS[d.kind]
    if k == "drag":
        src = f"{_nth_of(d.arg, DRAG, e)}{_q(e.node_labels[d.arg])}"
        if d.frame >= MAX_NODES:
            return f"Drag {src} {DRAG_DIRECTIONS[d.frame - MAX_NODES]}"
        same = [j for j, lab in enumerate(e.node_labels) if lab == e.node_labels[d.frame]]
        nth = f"the {ordinal(same.index(d.frame) + 1)} " if len(same) > 1 else ""
        return f"Drag {src} to {nth}{_q(e.node_labels[d.frame])}"
    if k in NODE_KINDS:
        label = e.node_labels[d.arg]
        if k in ("tap", "long_press"):
            return f"{'Tap' if k == 'tap' else 'Long press'} {_nth_of(d.arg, KIND_ID[k], e)}{_q(label)}"
        return f"Swipe {k.split('_')[1]} on {_q(label)}"
    if k in ("swipe_up", "swipe_down"):
        return f"Swipe {k.split('_')[1]}"
    if k == "home":
        return "Go home"
    if k == "complete":
        return "Complete"
    text = e.cand_text[d.arg]
    if k == "type":
        return f"Type {_q(text)}"
    if k == "answer":
        return f"Complete: {text}"
    return "Ask user: " + frames[d.frame].replace("{}", text)


def _nth_of(i: int, k: int, e: Encoded) -> str:
    """``"the 3rd "`` where node ``i`` is not the node its label alone grounds to (the first of the
    nodes so labelled that accepts kind ``k``; :class:`AccessibilityGrounder`), else ``""``: alike
    nodes ("text field", three times) are told apart by their place among those so labelled."""
    same = [j for j, lab in enumerate(e.node_labels) if lab == e.node_labels[i]]
    if len(same) < 2:
        return ""
    plain = next((j for j in same if e.node_accept[j][k]), same[0])
    return "" if plain == i else f"the {ordinal(same.index(i) + 1)} "


def render_text(d: Decision, e: Encoded, frames: list[str]) -> str:
    """Reasoning / Step / Remaining for a decision: short, and quoting only what is on screen."""
    step = render_step(d, e, frames)
    k = KINDS[d.kind]
    if k == "drag":
        why = f"{_q(e.node_labels[d.arg])} has to be moved."
    elif k in NODE_KINDS:
        why = f"{_q(e.node_labels[d.arg])} is the element on screen that moves the task forward."
    elif k == "type":
        why = "The field is focused; I enter the text the task needs."
    elif k == "ask":
        why = "The task needs a fact that only the user knows."
    elif k in ("complete", "answer"):
        why = "The task is done." if k == "complete" else "The answer is on the screen."
    elif k == "home":
        why = "I need another app; I go back to the home screen."
    else:
        why = "What I need is not visible yet; I scroll."
    rem = "nothing" if k in ("complete", "answer") else "continue until the task is done"
    return f"Reasoning: {why}\nStep: {step}\nRemaining: {rem}"


@lru_cache(maxsize=20_000)
def _goal_span_patterns(goal: str) -> tuple[tuple[str, re.Pattern], ...]:
    """The goal's spans that carry content, in :func:`spans` order, each with its compiled
    whole-word, case-insensitive pattern (:func:`question_frame`'s searches, once per goal)."""
    gp = pieces(goal)
    out = []
    for a, b in spans(gp, MAX_SPAN_CTX):
        txt = span_text(goal, gp, a, b)
        if content_keys(pieces(txt)):
            out.append((txt, re.compile(r"(?<![a-z0-9])" + re.escape(txt.lower()) + r"(?![a-z0-9])")))
    return tuple(out)


@lru_cache(maxsize=20_000)
def question_frame(question: str, goal: str) -> tuple[str, str] | None:
    """Split an expert question into (frame with ``{}``, the goal span it asks about): the
    longest run of goal pieces that occurs in the question, case-insensitively (the first
    such span in :func:`spans` order). Memoised, as are each goal's compiled span patterns
    (the result is an immutable tuple)."""
    ql = question.lower()
    best = None
    for txt, pat in _goal_span_patterns(goal):
        m = pat.search(ql)
        if m and (best is None or len(txt) > len(best[1])):
            best = (question[:m.start()] + "{}" + question[m.end():], txt)
    return best


def _page_swipe_on(c, e: Encoded) -> Decision | None:
    """``Swipe up|down on "X"`` as the planner's page-level swipe (its up / down kinds point at no
    node), where that is the same action: the page-level swipe starts at the screen's centre, so
    where the centre lies inside X's box it moves what X moves (sign-agreement's and
    scroll-text-2's text area, which scrolls by itself). Elsewhere it is not expressible: None."""
    for i in _labelled(c.target, c.nth, e)[:1]:
        x0, y0, x1, y1 = (float(v) for v in e.node_feats[i, _COLS_BOX])
        if x0 <= 0.5 <= x1 and y0 <= 0.5 <= y1:
            return Decision(KIND_ID[f"swipe_{c.direction}"])
    return None


def decision_for(step: str, e: Encoded, frames: list[str]) -> Decision | None:
    """The decision whose Step is ``step`` on state ``e`` (SFT targets); None if it has none."""
    from navrl.agent.steps import parse_step
    c = parse_step(step)
    if is_drag(c):
        return _drag_decision(c, e)
    if c.kind == "swipe" and c.target and c.direction in ("up", "down"):
        return _page_swipe_on(c, e)
    if c.kind in ("tap", "long_press") or (c.kind == "swipe" and c.target):
        k = KIND_ID[c.kind if c.kind != "swipe" else f"swipe_{c.direction}"]
        if c.target is None:
            return None
        if c.nth:      # the nth of the nodes so labelled (the grounder's reading)
            same = _labelled(c.target, c.nth, e)
            return Decision(k, same[0]) if same and e.node_accept[same[0]][k] else None
        cands = [i for i, lab in enumerate(e.node_labels) if lab == c.target and e.node_accept[i][k]]
        cands = cands or [i for i, lab in enumerate(e.node_labels) if norm(lab) == norm(c.target)
                          and e.node_accept[i][k]]
        return Decision(k, cands[0]) if cands else None
    if c.kind == "swipe":
        return Decision(KIND_ID[f"swipe_{c.direction}"]) if c.direction in ("up", "down") else None
    if c.kind == "home":
        return Decision(KIND_ID["home"])
    if c.kind == "complete" and not c.text:
        return Decision(KIND_ID["complete"])
    if c.kind == "type" and c.text:
        return _text_decision(KIND_ID["type"], c.text, e, 0)
    if c.kind == "complete":
        return _text_decision(KIND_ID["answer"], c.text, e, 1)
    if c.kind == "ask_user" and c.text:
        split = question_frame(c.text, e.goal)
        if split is None or split[0] not in frames:
            return None
        d = _text_decision(KIND_ID["ask"], split[1], e, 2)
        return Decision(d.kind, d.arg, frames.index(split[0])) if d else None
    return None


def _labelled(label: str, nth: int | None, e: Encoded) -> list[int]:
    """Nodes labelled ``label`` (exactly, else normalised), in screen order; only the ``nth``
    (1-based) of them when given."""
    same = ([i for i, lab in enumerate(e.node_labels) if lab == label]
            or [i for i, lab in enumerate(e.node_labels) if norm(lab) == norm(label)])
    if nth:
        return same[nth - 1:nth]
    return same


def _drag_decision(c, e: Encoded) -> Decision | None:
    """The drag decision of step command ``c`` (:func:`is_drag`) on state ``e``: the source node
    must accept a drag; the destination is a labelled node other than the source, or a direction."""
    if not c.target:
        return None
    srcs = [i for i in _labelled(c.target, c.nth, e) if e.node_accept[i][DRAG]]
    if not srcs:
        return None
    if c.dest:
        dst = [j for j in _labelled(c.dest, c.dest_nth, e) if j != srcs[0]]
        return Decision(DRAG, srcs[0], dst[0]) if dst else None
    if c.direction in DRAG_DIRECTIONS:
        return Decision(DRAG, srcs[0], MAX_NODES + DRAG_DIRECTIONS.index(c.direction))
    return None


def drag_targets(e: Encoded, src: int) -> np.ndarray:
    """[MAX_NODES + 4] bool: where a drag from node ``src`` of ``e`` may end (a labelled node other
    than the source, or one of the four directions)."""
    ok = np.zeros(MAX_NODES + len(DRAG_DIRECTIONS), bool)
    ok[:len(e.node_labels)] = [bool(lab) for lab in e.node_labels]
    ok[src] = False
    ok[MAX_NODES:] = True
    return ok


def _text_decision(kind: int, text: str, e: Encoded, use: int) -> Decision | None:
    from navrl.tasks.task import answers_match
    # the candidates' arrays, not e.cands: building thousands of Cand objects per augmented
    # demonstration was most of PPO-ptx's featurisation
    texts, usable = e.cand_text, e.cand_use[:, use].tolist()
    ok = [i for i, t in enumerate(texts) if t == text and usable[i]]
    if len(ok) > 1:       # the same text twice: the candidate computed for it first
        ok.sort(key=lambda i: -e.cand_feats[i, _COL_COMPUTED])
    if not ok and use == 1:   # an answer written differently ("59 F" for "H:59"): the longest
        ok = sorted((i for i, t in enumerate(texts)      # candidate the checker accepts
                     if usable[i] and answers_match(t, text) and len(t) >= 2),
                    key=lambda i: -len(texts[i]))
    return Decision(kind, ok[0]) if ok else None
