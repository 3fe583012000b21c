"""The pointer network: a small permutation-invariant encoder over [state; goal; history;
nodes] with factorised heads (kind, node pointer, text-span pointer, question frame).

A chunk of states is read packed (:func:`pack`): every real token once, the token-wise layers
(embeddings, layer norms, projections, feed-forward) over those rows only, attention per group
of states of similar length (:func:`size_buckets`), each padded to its longest. The heads are
factorised, so the last layer computes only what the decision reads (:class:`Encoding`): the
state token of every state first (the kind head reads it), then the node rows of the states
whose kind points at a node and the goal/answer rows of those whose kind points at a text span.

Shapes: B states; R packed rows; P positions of the groups' padded layouts; Lc goal/answer
pieces; H history steps; N nodes; S screen pieces; C text candidates; K kinds; F question
frames; D model width.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from navrl.agent.policy.pointer.config import PointerConfig
from navrl.agent.policy.pointer.features import (CAND_FEATS, CTX_FEATS, DRAG_DIRECTIONS, GLOBAL_FEATS, HIST_FEATS, K,
                                                 K_FIRST, MAX_NODES, NODE_FEATS, N_PLACEHOLDERS, ROLES, Encoded,
                                                 drag_targets)

NEG = -1e9
BUCKET_OVERHEAD = 80.0
"""A group's fixed cost in padded tokens: its attention ops (the token-wise layers run once
over the packed batch); measured on 2 cores, 40 to 300 within a few per cent."""


# rows of the input table (:meth:`PointerNet._input_table`): small tables first, the words last
_SEG, _CPOS, _HK = 0, 2, 66
_HP = _HK + K
_ROLE = _HP + 8
_ET = _ROLE + len(ROLES)
_CLS = _ET + 4
_BIAS = _CLS + 1
_WORD = _BIAS + 4
"""Where the words and placeholders start: a piece id i is row ``_WORD + i``."""
_DENSE = (0, CTX_FEATS, CTX_FEATS + HIST_FEATS, CTX_FEATS + HIST_FEATS + NODE_FEATS,
          CTX_FEATS + HIST_FEATS + NODE_FEATS + GLOBAL_FEATS)
"""Columns of the dense features of goal/answer pieces, history steps, nodes, state tokens."""

_ONEDNN_ROWS = 64
"""Rows from which an inference pass runs a linear layer through oneDNN with prepacked weights
(:func:`linear`): ~2x faster than ``F.linear`` (MKL) for the encoder's token-wise layers on this
machine's AMD cores, the same values; for a few rows its call costs more than it saves. oneDNN
builds a kernel per input shape (~0.4 ms, then cached): the rows are padded to one of 8 sizes
per octave, so batches of any size meet a few hundred kernels at most."""
_packed: "weakref.WeakKeyDictionary[nn.Linear, dict]" = weakref.WeakKeyDictionary()
_onednn = [torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")]


def _onednn_linear(x: torch.Tensor, owner, key, params: tuple, make, gelu: bool) -> torch.Tensor | None:
    """``x W^T + b`` (GELU'd if ``gelu``) through oneDNN, ``(W, b) = make()`` prepacked once per
    version of ``params`` (memoised on ``owner`` under ``key``); None where oneDNN cannot."""
    ver = [q._version for q in params]
    memo = _packed.get(owner)
    if memo is None:
        memo = _packed[owner] = {}
    hit = memo.get(key)
    M = x.shape[0]
    Mb = _rows(M)
    if Mb != M:   # oneDNN builds a kernel per input shape: rows padded to one of 8 sizes per octave
        x = torch.cat([x, x.new_zeros(Mb - M, x.shape[1])])
    try:
        if hit is None or hit[0] != ver or hit[1] != [q.data_ptr() for q in params]:
            w, b = make()
            hit = memo[key] = (ver, [q.data_ptr() for q in params],
                               torch.ops.mkldnn._reorder_linear_weight(w.detach(), None), b)
        y = torch.ops.mkldnn._linear_pointwise(x, hit[2], hit[3], "gelu" if gelu else "none", [],
                                               "none" if gelu else "")
        return y if Mb == M else y[:M]
    except RuntimeError:   # no oneDNN kernel for this build or input: the plain path from now on
        _onednn[0] = False
        return None


def _rows(m: int) -> int:
    """``m`` rounded up to one of 8 sizes per octave (from 64 rows: fewer run without oneDNN)."""
    if m < _ONEDNN_ROWS:
        return m
    step = 1 << max(3, m.bit_length() - 4)
    return -(-m // step) * step


def _fast(x: torch.Tensor) -> bool:
    return x.shape[0] >= _ONEDNN_ROWS and _onednn[0] and not torch.is_grad_enabled()


def _weights(lin: nn.Linear, part: slice | None):
    w, b = lin.weight, lin.bias
    return (w, b) if part is None else (w[part], None if b is None else b[part])


def linear(lin: nn.Linear, x: torch.Tensor, gelu: bool = False, part: slice | None = None) -> torch.Tensor:
    """``lin(x)`` (its output rows ``part`` only, if given), then GELU if ``gelu``. Without
    gradients and for many rows, through oneDNN with the weights prepacked once per weight
    version (an optimiser step or a load repacks them); else ``F.linear``."""
    if _fast(x):
        y = _onednn_linear(x, lin, None if part is None else (part.start, part.stop),
                           (lin.weight,) if lin.bias is None else (lin.weight, lin.bias),
                           lambda: _weights(lin, part), gelu)
        if y is not None:
            return y
    w, b = _weights(lin, part)
    y = F.linear(x, w, b)
    return F.gelu(y) if gelu else y


def _mlp(seq: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """A [Linear, GELU, Linear] block through :func:`linear`."""
    first, _, last = seq._modules.values()
    return linear(last, linear(first, x, gelu=True))


def _norm(ln: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


def _spots(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(state, position) of every row of states with ``lens`` rows each, in order."""
    rows = np.repeat(np.arange(len(lens)), lens)
    return rows, np.arange(len(rows)) - np.repeat(np.cumsum(lens) - lens, lens)


def _bag_input(ids: list[np.ndarray], n: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Several states' bags (``ids``: their piece ids, bag by bag; ``n``: pieces per bag) as
    (table rows, offsets) of one ``embedding_bag`` call."""
    n = np.concatenate(n)
    return torch.from_numpy(np.concatenate(ids) + _WORD), torch.from_numpy(np.cumsum(n) - n)


@dataclass
class _Group:
    """States of similar length attended together: each state's layout [cls | ctx lc | hist hh
    | nodes n | padding], its own rows contiguous and padded at the end to the group's longest,
    T = max(1 + lc + hh + n) positions each, at positions ``off`` .. ``off + len(states) * T``
    of the chunk's concatenated layouts. (Padding each of goal, history and nodes to the
    group's longest, as before 2026-12-05, laid out 1.36x the real rows and 1.39x the
    attention work on the phone world's states.)"""
    states: np.ndarray     # chunk indices
    T: int
    h0: int                # the group's first history position (its states': ``Packed.n0`` - their histories)
    n0: int                # the group's first node position (each state's: ``Packed.n0``)
    off: int
    pad: torch.Tensor      # [Bg,1,1,T] 0, or NEG for a padded key
    match: tuple           # (state, row, column) numpy arrays: a node and a goal/answer piece or
    #                        history step that match (both ways), each gets the head's match bias
    full: tuple | None = None              # the match entries' (state, row * T + column) tensors
    states_t: torch.Tensor | None = None
    _rows: torch.Tensor | None = None

    def __post_init__(self):
        b, r, c = self.match
        self.full = (torch.from_numpy(b), torch.from_numpy(r * self.T + c)) if len(b) else None
        self.states_t = torch.from_numpy(self.states)

    def pad_rows(self, h: int) -> torch.Tensor:
        """The padding bias of each state and head [Bg*h,1,T] (a score row's broadcast bias)."""
        if self._rows is None or self._rows.shape[0] != len(self.states) * h:
            self._rows = self.pad.expand(len(self.states), h, 1, self.T).reshape(len(self.states) * h, 1, self.T)
        return self._rows

    def bias(self, w: torch.Tensor, scores: torch.Tensor, loc: np.ndarray | None = None, q0: int = 0) -> torch.Tensor:
        """Add the match bias ``w`` [h] to ``scores`` [Bs*h,Tq,T] of this group's states ``loc``
        (all if None) for query positions q0.. (in place; returned)."""
        G, Tq, T = scores.shape
        h = w.shape[0]
        if loc is None and not q0:
            if self.full is not None:
                scores.view(G // h, h, Tq * T).transpose(1, 2).index_put_(self.full, w.expand(len(self.full[0]), h),
                                                                          accumulate=True)
            return scores
        b, r, c = self.match
        if loc is not None:
            at = np.full(len(self.states), -1, np.int64)
            at[loc] = np.arange(len(loc))
            keep = (at[b] >= 0) & (r >= q0)
            b, r, c = at[b[keep]], r[keep], c[keep]
        elif q0:
            keep = r >= q0
            b, r, c = b[keep], r[keep], c[keep]
        if len(b):
            scores.view(G // h, h, Tq * T).transpose(1, 2).index_put_(
                (torch.from_numpy(b), torch.from_numpy((r - q0) * T + c)), w.expand(len(b), h), accumulate=True)
        return scores


class Packed:
    """A chunk of states as :class:`PointerNet` reads it.

    Rows: [the B state tokens | every goal/answer piece | every history step | every node],
    state by state within each block. ``src`` [P] maps each group's padded layout to rows (a
    padded position to row 0: as a key it weighs exactly 0, as a query it is never read), ``pos``
    [R] each row to its place in those layouts. The heads' inputs (legal
    nodes, text candidates, screen pieces) are read from ``states`` for the states that need them."""

    def __init__(self, states: list[Encoded], overhead: float | None = None):
        B = self.B = len(states)
        self.states = states
        i64, f32 = np.int64, np.float32
        lc = self.n_ctx = np.fromiter((len(s.ctx_ids) for s in states), i64, B)
        hh = self.n_hist = np.fromiter((len(s.hist_kind) for s in states), i64, B)
        nn_ = self.n_node = np.fromiter((len(s.node_role) for s in states), i64, B)
        t = 1 + lc + hh + nn_
        self.ctx0 = B + np.cumsum(lc) - lc                      # first row of each state's pieces
        self.node0 = B + int(lc.sum()) + int(hh.sum()) + np.cumsum(nn_) - nn_
        Lc, H, N = int(lc.sum()), int(hh.sum()), int(nn_.sum())
        R = int(t.sum())
        self.R = Rb = _rows(R)   # rows R.. are zero rows, so that a layer's row count is one of a few
        cat, tt = np.concatenate, torch.from_numpy
        # --- token inputs: each row's table rows, summed (one bag per row: the state token's
        # [cls, type, glob_in bias]; a piece's [word, segment, position, type, ctx_in bias]; a
        # step's [kind, position, type, hist_in bias]; a node's [role, type, node_in bias]),
        # its dense features (one block of columns per row type), and mean-of-words bags
        _, jc = _spots(lc)
        _, jh = _spots(hh)
        _, jn = _spots(nn_)
        look = np.empty(3 * B + 5 * Lc + 4 * H + 3 * N, i64)
        v = look[:3 * B].reshape(B, 3)
        v[:] = (_CLS, _ET, _BIAS + 3)
        v = look[3 * B:3 * B + 5 * Lc].reshape(Lc, 5)
        v[:, 0] = cat([s.ctx_ids for s in states])
        v[:, 0] += _WORD
        v[:, 1] = cat([s.ctx_seg for s in states])
        v[:, 1] += _SEG
        v[:, 2] = cat([s.ctx_pos for s in states])
        v[:, 2] += _CPOS
        v[:, 3:] = (_ET + 1, _BIAS)
        v = look[3 * B + 5 * Lc:3 * B + 5 * Lc + 4 * H].reshape(H, 4)
        if H:
            v[:, 0] = np.fromiter(chain.from_iterable(s.hist_kind for s in states), i64, H)
            v[:, 0] += _HK
            v[:, 1] = np.minimum(jh, 7)
            v[:, 1] += _HP
            v[:, 2:] = (_ET + 2, _BIAS + 1)
        v = look[3 * B + 5 * Lc + 4 * H:].reshape(N, 3)
        v[:, 0] = cat([s.node_role for s in states])
        v[:, 0] += _ROLE
        v[:, 1:] = (_ET + 3, _BIAS + 2)
        off = np.empty(Rb, i64)
        off[:B] = np.arange(0, 3 * B, 3)
        off[B:B + Lc] = np.arange(3 * B, 3 * B + 5 * Lc, 5)
        off[B + Lc:B + Lc + H] = np.arange(3 * B + 5 * Lc, 3 * B + 5 * Lc + 4 * H, 4)
        off[B + Lc + H:R] = np.arange(3 * B + 5 * Lc + 4 * H, len(look), 3)
        off[R:] = len(look)
        self.look = (tt(look), tt(off))
        dense = np.zeros((Rb, _DENSE[-1]), f32)
        dense[:B, _DENSE[3]:] = np.stack([s.glob for s in states])
        dense[B:B + Lc, _DENSE[0]:_DENSE[1]] = cat([s.ctx_feats for s in states])
        if H:
            dense[B + Lc:B + Lc + H, _DENSE[1]:_DENSE[2]] = np.fromiter(
                chain.from_iterable(s.hist_feats for s in states), f32, H * HIST_FEATS).reshape(H, HIST_FEATS)
        dense[B + Lc + H:R, _DENSE[2]:_DENSE[3]] = cat([s.node_feats for s in states])
        self.dense = tt(dense)
        self.hist_row0 = B + Lc                                # the first history step's row
        hw = np.fromiter(chain.from_iterable(s.hist_words for s in states), i64)
        hn = np.fromiter(chain.from_iterable(s.hist_n for s in states), i64, H)
        self.word_bag = _bag_input([hw] + [s.node_label_ids for s in states], [hn] + [s.node_label_n for s in states])
        self.value_bag = _bag_input([s.node_value_ids for s in states], [s.node_value_n for s in states])
        self.kind_mask = tt(np.stack([s.kind_mask for s in states]))
        # --- groups and their padded layouts
        groups = size_buckets(t.tolist(), overhead) if B > 1 else [[0]]
        base, h0, n0 = (np.empty(B, i64) for _ in range(3))
        g_of, loc = np.empty(B, i64), np.empty(B, i64)
        specs, off = [], 0
        for gi, g in enumerate(groups):
            ix = np.asarray(g, i64)
            T = int(t[ix].max())
            k = np.arange(len(ix))
            base[ix] = off + k * T
            h0[ix], n0[ix], g_of[ix], loc[ix] = 1 + lc[ix], 1 + lc[ix] + hh[ix], gi, k
            specs.append((ix, T, int(h0[ix].min()), int(n0[ix].min()), off))
            off += len(ix) * T
        self.P, self.n0, self.g_of, self.loc = off, n0, g_of, loc
        pos = np.zeros(Rb, i64)                         # a zero row reads position 0
        pos[:B] = base
        pos[B:B + Lc] = np.repeat(base + 1, lc) + jc
        pos[B + Lc:B + Lc + H] = np.repeat(base + h0, hh) + jh
        pos[B + Lc + H:R] = np.repeat(base + n0, nn_) + jn
        src = self.src_np = np.zeros(off, i64)          # a padded position reads row 0 (its key weighs 0)
        src[pos[:R]] = np.arange(R)
        pad = np.full(off, NEG, f32)
        pad[pos[:R]] = 0.0
        bs, rs, cs = [], [], []
        for attr, col0 in (("match_ctx", None), ("match_hist", h0)):
            m = [getattr(s, attr) for s in states]
            cnt = np.fromiter((len(x) for x in m), i64, B)
            if cnt.any():
                b = np.repeat(np.arange(B), cnt)
                pairs = cat(m) if col0 is None else np.array(list(chain.from_iterable(m)), i64).reshape(-1, 2)
                r, c = n0[b] + pairs[:, 0], (1 if col0 is None else col0[b]) + pairs[:, 1]
                bs += [b, b]
                rs += [r, c]
                cs += [c, r]
        mb, mr, mc = (cat(v) if v else np.zeros(0, i64) for v in (bs, rs, cs))
        gm = g_of[mb]
        self.pos, self.src = tt(pos), tt(src)
        self.groups = []
        for gi, (ix, T, a, b, o) in enumerate(specs):
            k = gm == gi
            self.groups.append(_Group(ix, T, a, b, o, tt(pad[o:o + len(ix) * T]).view(len(ix), 1, 1, T),
                                      (loc[mb[k]], mr[k], mc[k])))
        inverse = np.empty(B, i64)
        inverse[cat([g.states for g in self.groups])] = np.arange(B)
        self.inverse = tt(inverse)             # state -> its place in the groups' order
        self.N, self.N_all = max(1, int(nn_.max())), N
        self.C = max(1, max(len(s.cand_a) for s in states))


def pack(states: list[Encoded], overhead: float | None = None) -> Packed:
    """A chunk of states packed for :class:`PointerNet` (see :class:`Packed`)."""
    return Packed(states, overhead)


def size_buckets(lengths: list[int], overhead: float | None = None) -> list[list[int]]:
    """Split states of encoder lengths ``lengths`` into groups of similar length (indices,
    shortest first) that minimise the padded work: a group costs ``overhead`` (its fixed
    cost, in tokens) plus its size x its longest length x (1 + length / 256) (padded work
    and attention). Screens differ a lot in size (12 to 100 elements on
    the phone world, a median of 27), so padding a batch to its longest state does ~4x the
    work; a few passes over similar states do little more than the real work."""
    overhead = BUCKET_OVERHEAD if overhead is None else overhead
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    T = [lengths[i] for i in order]
    n = len(T)
    best = [0.0] + [math.inf] * n   # best[j]: cost of the first j states
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        t = T[j - 1]
        f = 1 + t / 256
        c = [best[i] + overhead + (j - i) * t * f for i in range(j)]
        best[j] = min(c)
        cut[j] = c.index(best[j])   # the first of equal costs
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


class _Layer(nn.Module):
    def __init__(self, d: int, h: int, ff: int):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    @staticmethod
    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """softmax(q k^T / sqrt(dh) + bias) v over [G,Tq,dh] x [G,T,dh] (G = states x heads)."""
        s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=1 / math.sqrt(q.shape[-1]))
        return torch.bmm(torch.softmax(s, -1), v)

    def out(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """The rest of the layer on rows ``x`` given their attention outputs ``a`` [n,D]."""
        x = x + linear(self.proj, a)
        return x + _mlp(self.ff, _norm(self.ln2, x))

    def forward(self, x: torch.Tensor, pk: Packed, w: torch.Tensor) -> torch.Tensor:
        """Every row of ``x`` [R,D] through the layer (``w`` [h]: the match bias per head)."""
        D = x.shape[1]
        h, dh = self.h, D // self.h
        g_all = linear(self.qkv, _norm(self.ln1, x)).index_select(0, pk.src)           # [P,3D]
        outs = []
        for g in pk.groups:
            Bg, T = len(g.states), g.T
            q = g_all[g.off:g.off + Bg * T].view(Bg, T, 3, h, dh).permute(2, 0, 3, 1, 4).reshape(3, Bg * h, T, dh)
            qq, kk, vv = q.unbind(0)
            s = torch.baddbmm(g.pad_rows(h), qq, kk.transpose(1, 2), alpha=1 / math.sqrt(dh))
            a = torch.bmm(torch.softmax(g.bias(w, s), -1), vv)
            outs.append(a.view(Bg, h, T, dh).transpose(1, 2).reshape(Bg * T, D))
        return self.out(x, torch.cat(outs).index_select(0, pk.pos))


class Encoding:
    """The encoder's output for a packed chunk, its last layer computed on demand: ``cls``
    [B,D] (every state token, what the kind head reads) at once; the node rows and goal/answer
    rows of chosen states by :meth:`rows` (the pointer heads read those)."""

    def __init__(self, net: "PointerNet", pk: Packed):
        self.net, self.pk = net, pk
        x = net.embed_tokens(pk)
        *first, last = net.layers
        for li, layer in enumerate(first):
            x = layer(x, pk, net.match_w[li])
        self.layer = last
        D = x.shape[1]
        h, dh = last.h, D // last.h
        self.x, self.y = x, _norm(last.ln1, x)
        kv = linear(last.qkv, self.y, part=slice(D, 3 * D)).index_select(0, pk.src)    # [P,2D]
        qc = linear(last.qkv, self.y[:pk.B], part=slice(0, D))                         # [B,D]
        self.w = net.match_w[-1]
        self._kv = []
        outs = []
        for g in pk.groups:
            Bg, T = len(g.states), g.T
            kvg = kv[g.off:g.off + Bg * T].view(Bg, T, 2, h, dh).permute(2, 0, 3, 1, 4).reshape(2, Bg * h, T, dh)
            self._kv.append(kvg)     # made contiguous once: rows() reads it again
            k, v = kvg.unbind(0)
            # the state token matches nothing: its bias row is the padding alone
            q = qc.index_select(0, g.states_t).view(Bg * h, 1, dh)
            outs.append(last.attend(q, k, v, g.pad_rows(h)).view(Bg, D))
        a = torch.cat(outs).index_select(0, pk.inverse)
        self.cls = _norm(net.ln, last.out(x[:pk.B], a))

    def rows(self, states: np.ndarray, text: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The last layer's node rows of chunk states ``states`` (sorted) and their goal/answer
        rows where ``text`` (a bool per state): (nodes [sum of their nodes, D] state by state,
        ctx [sum of the text states' pieces, D] state by state)."""
        pk, last, net = self.pk, self.layer, self.net
        D = self.x.shape[1]
        h, dh = last.h, D // last.h
        q_src, plan, qoff = [], [], 0
        qpos = np.full(pk.B, -1, np.int64)          # a state's first query position, in the queries' layouts
        q0_of = np.zeros(pk.B, np.int64)
        gs = pk.g_of[states]
        for gi in np.unique(gs).tolist():            # the groups that hold a chosen state
            g = pk.groups[gi]
            at = gs == gi
            loc = np.sort(pk.loc[states[at]])
            Bs, T = len(loc), g.T
            q0 = 1 if text[at].any() else int(pk.n0[g.states[loc]].min())
            Tq = T - q0
            q_src.append(pk.src_np[g.off:g.off + len(g.states) * T].reshape(-1, T)[loc, q0:].reshape(-1))
            qpos[g.states[loc]] = qoff + np.arange(Bs) * Tq
            q0_of[g.states[loc]] = q0
            plan.append((gi, loc, q0, Tq))
            qoff += Bs * Tq
        yq = self.y.index_select(0, torch.from_numpy(np.concatenate(q_src)))
        qq = linear(last.qkv, yq, part=slice(0, D))                                    # [Q,D]
        outs, o = [], 0
        for gi, loc, q0, Tq in plan:
            g = pk.groups[gi]
            Bs, T = len(loc), g.T
            whole = Bs == len(g.states)
            kvg = self._kv[gi]
            if not whole:
                kvg = kvg.view(2, len(g.states), h * T * dh).index_select(1, torch.from_numpy(loc))
            k, v = kvg.view(2, Bs * h, T, dh).unbind(0)
            q = qq[o:o + Bs * Tq].view(Bs, Tq, h, dh).transpose(1, 2).reshape(Bs * h, Tq, dh)
            pad = g.pad if whole else g.pad[torch.from_numpy(loc)]
            s = torch.baddbmm(pad.expand(Bs, h, 1, T).reshape(Bs * h, 1, T), q, k.transpose(1, 2),
                              alpha=1 / math.sqrt(dh))
            a = torch.bmm(torch.softmax(g.bias(self.w, s, None if whole else loc, q0), -1), v)
            outs.append(a.view(Bs, h, Tq, dh).transpose(1, 2).reshape(Bs * Tq, D))
            o += Bs * Tq
        # node rows of every selected state, then goal/answer rows of the text ones
        nn_, lc = pk.n_node[states], pk.n_ctx[states[text]]
        _, jn = _spots(nn_)
        _, jc = _spots(lc)
        st, tt_ = np.repeat(states, nn_), np.repeat(states[text], lc)
        at = np.concatenate([qpos[st] + pk.n0[st] - q0_of[st] + jn, qpos[tt_] + 1 - q0_of[tt_] + jc])
        rows = np.concatenate([pk.node0[st] + jn, pk.ctx0[tt_] + jc])
        out = _norm(net.ln, last.out(self.x.index_select(0, torch.from_numpy(rows)),
                              torch.cat(outs).index_select(0, torch.from_numpy(at))))
        return out[:len(st)], out[len(st):]


class Shared:
    """Samples whose states repeat (sibling rollouts share their first screens; a PPO minibatch
    holds one state with several sampled decisions), read as the heads read a :class:`Packed`
    chunk of one state per sample: the encoder runs once per distinct state (``pk``, ``enc``)
    and each sample gathers its state's rows (``of``: the sample's state in ``pk``), so the
    gradients of a shared row add up over its samples — the loss and gradient of encoding
    every sample on its own. What the heads read of a chunk: ``B``, ``states``, ``n_node``,
    ``n_ctx``, ``kind_mask``, ``N``, ``C``; ``cls`` and :meth:`rows` as :class:`Encoding`'s."""

    def __init__(self, pk: Packed, enc: "Encoding", of: np.ndarray):
        self.pk, self.enc, self.of = pk, enc, of
        of_t = torch.from_numpy(of)
        self.B = len(of)
        self.states = [pk.states[j] for j in of.tolist()]
        self.n_node, self.n_ctx = pk.n_node[of], pk.n_ctx[of]
        self.kind_mask = pk.kind_mask.index_select(0, of_t)
        self.N, self.C = pk.N, pk.C
        self.cls = enc.cls.index_select(0, of_t)

    def encoded_by(self, net: "PointerNet") -> "Shared":
        """The same samples read through another network's encoding of the distinct states
        (the frozen prior planner's, ``exploration.explore_prior``)."""
        return Shared(self.pk, net.encode(self.pk), self.of)

    def rows(self, samples: np.ndarray, text: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`Encoding.rows` of ``samples`` (sorted sample indices): each distinct state's
        rows computed once (its goal/answer rows where any of its samples wants them), then
        gathered sample by sample."""
        pk = self.pk
        u = self.of[samples]
        uu = np.unique(u)
        k = np.searchsorted(uu, u)
        text_u = np.zeros(len(uu), bool)
        text_u[k[text]] = True
        nodes_u, ctx_u = self.enc.rows(uu, text_u)
        nn_u = pk.n_node[uu]
        _, jn = _spots(nn_u[k])
        node_at = np.repeat((np.cumsum(nn_u) - nn_u)[k], nn_u[k]) + jn
        lc_u = np.where(text_u, pk.n_ctx[uu], 0)
        kt = k[text]
        _, jc = _spots(lc_u[kt])
        ctx_at = np.repeat((np.cumsum(lc_u) - lc_u)[kt], lc_u[kt]) + jc
        return nodes_u.index_select(0, torch.from_numpy(node_at)), ctx_u.index_select(0, torch.from_numpy(ctx_at))


def node_rows_of(pk: Packed, have: np.ndarray, want: np.ndarray) -> torch.Tensor | None:
    """Where the node rows of chunk states ``want`` are among those of ``have`` (both sorted,
    ``want`` within ``have``; rows state by state); None when they are all of them."""
    if len(want) == len(have):
        return None
    n = pk.n_node[have]
    first = np.cumsum(n) - n
    at = np.searchsorted(have, want)
    _, j = _spots(n[at])
    return torch.from_numpy(np.repeat(first[at], n[at]) + j)


class PointerNet(nn.Module):
    def __init__(self, cfg: PointerConfig, vocab_size: int, seed: int = 0):
        super().__init__()
        # initial weights from ``seed`` alone (the global RNG is left as it was): the same
        # seed gives the same planner in every process
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._build(cfg, vocab_size, seed)

    def _build(self, cfg: PointerConfig, vocab_size: int, seed: int) -> None:
        d = cfg.d_model
        self.cfg, self.vocab_size = cfg, vocab_size
        self.word = nn.Embedding(vocab_size, d, padding_idx=0)
        g = torch.Generator().manual_seed(seed + 4242)
        # entity vectors: fixed (not trained), so no weight can attach meaning to one entity
        self.register_buffer("placeholders", torch.randn(N_PLACEHOLDERS, d, generator=g) * cfg.placeholder_scale)
        self.seg = nn.Embedding(2, d)
        self.cpos = nn.Embedding(64, d)
        self.ctx_in = nn.Linear(CTX_FEATS, d)
        self.hist_kind = _appended_zero_rows(nn.Embedding(K_FIRST, d), K)
        self.hist_pos = nn.Embedding(8, d)
        self.hist_in = nn.Linear(HIST_FEATS, d)
        self.role = nn.Embedding(len(ROLES), d)
        self.node_in = _appended_zero_columns(nn.Linear(NODE_FEATS_FIRST, d), NODE_FEATS)
        self.value_in = nn.Linear(d, d, bias=False)
        self.glob_in = nn.Linear(GLOBAL_FEATS, d)
        self.cls = nn.Parameter(torch.zeros(d))
        self.etype = nn.Embedding(4, d)   # cls, ctx, hist, node
        self.layers = nn.ModuleList(_Layer(d, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.match_w = nn.Parameter(torch.full((cfg.n_layers, cfg.n_heads), 1.0))
        self.ln = nn.LayerNorm(d)
        self.kind_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), _appended_zero_rows(nn.Linear(d, K_FIRST), K))
        self.node_head = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), _appended_zero_rows(nn.Linear(d, K_FIRST), K))
        self.kind_emb = _appended_zero_rows(nn.Embedding(K_FIRST, d), K)
        self.span_q = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, 2 * d))
        self.scr_node = nn.Linear(d, d)
        self.scr_pos = nn.Embedding(32, d)
        self.fixed = nn.Embedding(2, d)
        # [the first candidate columns; the kind's one-hot; columns appended since], zero-weighted
        self.cand_w = nn.Sequential(_appended_zero_columns(_inserted_zero_columns(
            nn.Linear(CAND_FEATS_FIRST + K_FIRST, d), CAND_FEATS_FIRST + K_FIRST, K - K_FIRST), CAND_FEATS + K),
            nn.GELU(), nn.Linear(d, 1))
        self.frame_head = nn.Sequential(nn.Linear(3 * d, d), nn.GELU(), nn.Linear(d, cfg.max_frames))
        # the focused field's row -> the span query (text_reads_field); zero weights drawn from
        # no RNG, so a seed gives the same planner with or without it until training moves them
        self.field_q = _zero_linear(d, 2 * d) if cfg.text_reads_field else None
        # the drag's destination: each node given the state and the dragged node's row, and the
        # four directions given the state and that row (built last: the layers above draw what
        # they drew before the drag kind was added)
        self.drag_node = nn.Sequential(nn.Linear(3 * d, d), nn.GELU(), nn.Linear(d, 1))
        self.drag_dir = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, len(DRAG_DIRECTIONS)))
        sizes = [2, 64, K, 8, len(ROLES), 4, 1]
        assert [_SEG, _CPOS, _HK, _HP, _ROLE, _ET, _CLS, _BIAS] == [sum(sizes[:i]) for i in range(8)]

    def embed(self, ids: torch.Tensor, table: torch.Tensor | None = None) -> torch.Tensor:
        """Piece ids [...] -> [..., D]: UI words learnt, entities fixed placeholders (ids
        ``vocab_size + j``): one look-up in the words' table followed by the placeholders'
        (:meth:`_table`; a placeholder row gets no gradient, nor does padding)."""
        return F.embedding(ids, self._table() if table is None else table, padding_idx=0)

    def _table(self) -> torch.Tensor:
        return torch.cat([self.word.weight, self.placeholders])

    def _input_table(self) -> torch.Tensor:
        """Every input vector the encoder sums, one table: segments, positions, history kinds and
        positions, roles, element types, the state token, the four input biases, then the words
        and placeholders (rows ``_SEG`` .. ``_WORD`` + piece id)."""
        return torch.cat([self.seg.weight, self.cpos.weight, self.hist_kind.weight, self.hist_pos.weight,
                          self.role.weight, self.etype.weight, self.cls[None], self.ctx_in.bias[None],
                          self.hist_in.bias[None], self.node_in.bias[None], self.glob_in.bias[None], self.word.weight,
                          self.placeholders])

    def _dense_weight(self) -> torch.Tensor:
        return torch.cat([self.ctx_in.weight, self.hist_in.weight, self.node_in.weight, self.glob_in.weight], 1)

    def embed_tokens(self, pk: Packed) -> torch.Tensor:
        """The input rows of a packed chunk [R,D] (:class:`Packed`): state tokens ``cls`` + W g
        + type; goal/answer pieces word + segment + position + W f + type; history steps kind +
        mean of its words + W f + position + type; nodes role + mean of the label's words + V
        (mean of the value's words) + W f + type (W: each type's input layer)."""
        tb = self._input_table()
        x = F.embedding_bag(pk.look[0], tb, pk.look[1], mode="sum")
        d = _onednn_linear(pk.dense, self, "dense", (self.ctx_in.weight, self.hist_in.weight, self.node_in.weight,
                                                     self.glob_in.weight), lambda: (self._dense_weight(), None),
                           False) if _fast(pk.dense) else None
        x = x + (F.linear(pk.dense, self._dense_weight()) if d is None else d)
        a, H_N, N = pk.hist_row0, len(pk.word_bag[1]), pk.N_all
        x[a:a + H_N] += F.embedding_bag(pk.word_bag[0], tb, pk.word_bag[1], mode="mean")
        if N:
            x[a + H_N - N:a + H_N] += linear(self.value_in, F.embedding_bag(pk.value_bag[0], tb, pk.value_bag[1],
                                                                            mode="mean"))
        return x

    def encode(self, pk: Packed) -> Encoding:
        return Encoding(self, pk)

    # ------------------------------------------------------------------ heads (logits, masked)
    def kind_logits(self, cls: torch.Tensor, kind_mask: torch.Tensor) -> torch.Tensor:
        return _mlp(self.kind_head, cls).masked_fill(~kind_mask, NEG)                # [B,K]

    def node_logits(self, cls: torch.Tensor, nodes: torch.Tensor, pk: Packed, states: np.ndarray,
                    kind: torch.Tensor) -> torch.Tensor:
        """Node pointer of chunk states ``states`` (their node rows ``nodes``, state by state) for
        their kinds ``kind`` [B] -> [B,N], masked to nodes accepting the kind; other states' rows
        are all NEG."""
        b, j = _spots(pk.n_node[states])
        bt = torch.from_numpy(states[b])
        kb = kind.index_select(0, bt)[:, None]
        s = _mlp(self.node_head, torch.cat([nodes, cls.index_select(0, bt)], -1)).gather(1, kb).squeeze(1)
        acc = torch.from_numpy(np.concatenate([pk.states[i].node_accept for i in states.tolist()]).reshape(-1, K))
        ok = acc.gather(1, kb).squeeze(1)
        out = cls.new_full((pk.B, pk.N), NEG)
        return out.index_put((bt, torch.from_numpy(j)), s.masked_fill(~ok, NEG))

    def drag_logits(self, cls: torch.Tensor, nodes: torch.Tensor, pk: Packed, states: np.ndarray,
                    src: torch.Tensor) -> torch.Tensor:
        """Destination of the drags of chunk states ``states`` (sorted; ``nodes``: their node rows,
        state by state) from their dragged nodes ``src`` [B] -> [B, MAX_NODES + 4]: each node
        given the state and the dragged node's row, then the four directions
        (:data:`DRAG_DIRECTIONS`) given the same; masked to :func:`drag_targets`, other states'
        rows all NEG."""
        n = pk.n_node[states]
        b, j = _spots(n)
        st = torch.from_numpy(states)
        picks = src.index_select(0, st).numpy()
        rows = nodes.index_select(0, torch.from_numpy(np.cumsum(n) - n + picks))       # the dragged nodes [n,D]
        c = cls.index_select(0, st)
        bt = torch.from_numpy(b)
        to_node = _mlp(self.drag_node, torch.cat([nodes, c.index_select(0, bt), rows.index_select(0, bt)], -1))
        to_dir = _mlp(self.drag_dir, torch.cat([c, rows], -1))                          # [n,4]
        nd = len(DRAG_DIRECTIONS)
        out = cls.new_full((pk.B, MAX_NODES + nd), NEG).index_put((torch.from_numpy(states[b]), torch.from_numpy(j)),
                                                                  to_node.squeeze(-1))
        out = out.index_put((st[:, None], torch.arange(MAX_NODES, MAX_NODES + nd)[None]), to_dir)
        ok = np.zeros((pk.B, MAX_NODES + nd), bool)
        ok[states] = [drag_targets(pk.states[i], s) for i, s in zip(states.tolist(), picks.tolist())]
        return out.masked_fill(~torch.from_numpy(ok), NEG)

    def cand_logits(self, cls: torch.Tensor, ctx: torch.Tensor, nodes: torch.Tensor, pk: Packed,
                    node_states: np.ndarray, states: np.ndarray, kind: torch.Tensor, use: torch.Tensor):
        """Text-span pointer of chunk states ``states`` (a sorted subset of ``node_states``,
        whose node rows are ``nodes``; ``ctx``: their goal/answer rows, state by state) for their
        kinds; ``use`` [B] 0 type / 1 answer / 2 ask. Returns logits [B,C] (other states' rows
        all NEG) and the reference rows (spans' first/last pieces: each state's [ctx | screen
        pieces | 2 fixed], state by state) with each state's first one."""
        B, D = cls.shape
        es = [pk.states[i] for i in states.tolist()]
        n = len(es)
        cat, tt = np.concatenate, torch.from_numpy
        lc = pk.n_ctx[states]
        sc = np.fromiter((len(e.scr_ids) for e in es), np.int64, n)
        nc = np.fromiter((len(e.cand_a) for e in es), np.int64, n)
        nr = lc + sc + 2
        r0 = np.cumsum(nr) - nr                                    # each state's first reference row
        # a screen piece's node: its row among ``nodes``
        n_all = pk.n_node[node_states]
        first = (np.cumsum(n_all) - n_all)[np.searchsorted(node_states, states)]
        scr_node = cat([e.scr_node for e in es]) + np.repeat(first, sc)
        scr = (self.embed(tt(cat([e.scr_ids for e in es]))) + linear(self.scr_node, nodes.index_select(0, tt(scr_node)))
               + self.scr_pos(tt(cat([e.scr_pos for e in es]))))
        # reference rows: [ctx rows | screen rows | fixed rows] -> each state's [ctx | scr | fixed]
        where = cat([np.repeat(r0, lc) + _spots(lc)[1], np.repeat(r0 + lc, sc) + _spots(sc)[1],
                     np.repeat(r0 + lc + sc, 2) + np.tile([0, 1], n)])
        ref = torch.cat([ctx, scr, self.fixed.weight.repeat(n, 1)]).index_select(0, tt(np.argsort(where)))
        st_t = tt(states)
        kb = kind.index_select(0, st_t)
        q = _mlp(self.span_q, torch.cat([cls.index_select(0, st_t), F.embedding(kb, self.kind_emb.weight)], -1))
        if self.field_q is not None:   # what to type reads where it goes: the focused field's row
            fi = np.fromiter((e.focus for e in es), np.int64, n)
            has = np.flatnonzero(fi >= 0)
            if len(has):
                fq = linear(self.field_q, nodes.index_select(0, tt(first[has] + fi[has])))
                q = q.index_add(0, tt(has), fq)
        se = (ref[:, None, :] * q.view(n, 2, D).repeat_interleave(tt(nr), 0)).sum(-1) / math.sqrt(D)   # [rows,2]
        b_k, j_k = _spots(nc)
        shift = np.repeat(r0, nc)
        bk = tt(b_k)
        feats = tt(cat([e.cand_feats for e in es]).reshape(-1, CAND_FEATS))
        onehot = F.one_hot(kb, K).to(feats.dtype).index_select(0, bk)
        s = (se[:, 0].index_select(0, tt(cat([e.cand_a for e in es]) + shift))
             + se[:, 1].index_select(0, tt(cat([e.cand_b for e in es]) + shift))
             + _mlp(self.cand_w, torch.cat([feats[:, :CAND_FEATS_FIRST], onehot, feats[:, CAND_FEATS_FIRST:]],
                                           -1)).squeeze(-1))
        usable = tt(cat([e.cand_use for e in es]).reshape(-1, 3))
        ok = usable.gather(1, use.index_select(0, st_t).index_select(0, bk)[:, None]).squeeze(1)
        out = cls.new_full((B, pk.C), NEG).index_put((tt(states[b_k]), tt(j_k)), s.masked_fill(~ok, NEG))
        return out, (ref, r0)

    def frame_logits(self, cls: torch.Tensor, ref, pk: Packed, text_states: np.ndarray, states: np.ndarray,
                     cand: torch.Tensor, n_frames: int) -> torch.Tensor:
        """Question frame of chunk states ``states`` (a sorted subset of ``text_states``, whose
        reference rows :meth:`cand_logits` returned) given the chosen subject spans ``cand`` [B]
        -> [B,F]; other states' rows all NEG."""
        ref, r0 = ref
        r0 = r0[np.searchsorted(text_states, states)]
        picks = cand.index_select(0, torch.from_numpy(states)).tolist()
        es = [pk.states[i] for i in states.tolist()]
        a = torch.from_numpy(r0 + np.array([e.cand_a[c] for e, c in zip(es, picks)], np.int64))
        b = torch.from_numpy(r0 + np.array([e.cand_b[c] for e, c in zip(es, picks)], np.int64))
        st_t = torch.from_numpy(states)
        f = _mlp(self.frame_head, torch.cat([cls.index_select(0, st_t), ref.index_select(0, a), ref.index_select(0, b)], -1))
        F_ = f.shape[1]
        if n_frames < F_:
            f = f.masked_fill(torch.arange(F_)[None] >= n_frames, NEG)
        return cls.new_full((cls.shape[0], F_), NEG).index_put((st_t,), f)


CAND_FEATS_FIRST = 16
"""The candidate columns the first layer of ``cand_w`` was initialised with, before the kind's
one-hot; candidate columns appended since (the case twin's flag) follow the one-hot with zero
weights, so a seed gives the same planner as before and saved planners widen by zero columns at
the end (:func:`navrl.agent.policy.pointer.planner.widen_node_inputs`)."""

NODE_FEATS_FIRST = 27
"""The node-input width the layer is initialised at; node columns appended since (the used-app
column) start with zero weights, so a seed gives the same planner as before they were added
(same random draws, the new inputs neutral until training finds a use for them)."""


def _appended_zero_rows(layer, n: int):
    """``layer`` (a Linear or an Embedding) with zero rows appended up to ``n`` outputs (rows)."""
    if layer.weight.shape[0] == n:
        return layer
    out = torch.nn.utils.skip_init(type(layer), *((layer.in_features, n) if isinstance(layer, nn.Linear)
                                                  else (n, layer.embedding_dim)))
    with torch.no_grad():
        out.weight.zero_()
        out.weight[:layer.weight.shape[0]] = layer.weight
        if getattr(layer, "bias", None) is not None:
            out.bias.zero_()
            out.bias[:layer.bias.shape[0]] = layer.bias
    return out


def _inserted_zero_columns(layer: nn.Linear, at: int, n: int) -> nn.Linear:
    """``layer`` with ``n`` zero input columns inserted before column ``at``."""
    if n == 0:
        return layer
    out = torch.nn.utils.skip_init(nn.Linear, layer.in_features + n, layer.out_features)
    with torch.no_grad():
        out.weight.zero_()
        out.weight[:, :at] = layer.weight[:, :at]
        out.weight[:, at + n:] = layer.weight[:, at:]
        out.bias.copy_(layer.bias)
    return out


def _zero_linear(n_in: int, n_out: int) -> nn.Linear:
    """A bias-free layer ``n_in -> n_out`` with zero weights, drawing nothing from the RNG."""
    out = torch.nn.utils.skip_init(nn.Linear, n_in, n_out, bias=False)
    with torch.no_grad():
        out.weight.zero_()
    return out


def _appended_zero_columns(layer: nn.Linear, width: int) -> nn.Linear:
    """``layer`` widened to ``width`` inputs by zero weight columns at the end."""
    if width == layer.in_features:
        return layer
    out = torch.nn.utils.skip_init(nn.Linear, width, layer.out_features)   # draws nothing from the RNG
    with torch.no_grad():
        out.weight.zero_()
        out.weight[:, :layer.in_features] = layer.weight
        out.bias.copy_(layer.bias)
    return out
