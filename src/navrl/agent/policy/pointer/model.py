"""The pointer network: a small permutation-invariant encoder over [state; goal; history;
nodes] with factorised heads (kind, node pointer, text-span pointer, question frame).

Shapes: B states; Lc goal/answer pieces; H history steps; N nodes; S screen pieces;
C text candidates; K kinds; F question frames; D model width.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from navrl.agent.policy.pointer.features import (CAND_FEATS, CTX_FEATS, GLOBAL_FEATS, HIST_FEATS, K, NODE_FEATS,
                                                 N_PLACEHOLDERS, ROLES, Encoded)

NEG = -1e9
BUCKET_OVERHEAD = 80.0
"""A group's fixed cost in padded tokens: its attention ops (the token-wise layers run once
over the packed batch); measured on 2 cores, 40 to 300 within a few per cent."""


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


@dataclass
class Collated:
    ctx_ids: torch.Tensor      # [B,Lc]
    ctx_seg: torch.Tensor
    ctx_pos: torch.Tensor
    ctx_feats: torch.Tensor    # [B,Lc,CTX_FEATS]
    ctx_mask: torch.Tensor     # [B,Lc] bool
    hist_kind: torch.Tensor    # [B,H]
    hist_ids: torch.Tensor     # [B,H,Lh]
    hist_feats: torch.Tensor   # [B,H,HIST_FEATS]
    hist_mask: torch.Tensor
    glob: torch.Tensor         # [B,GLOBAL_FEATS]
    node_role: torch.Tensor    # [B,N]
    node_label: torch.Tensor   # [B,N,Ll]
    node_value: torch.Tensor   # [B,N,Lv]
    node_feats: torch.Tensor   # [B,N,NODE_FEATS]
    node_mask: torch.Tensor
    node_accept: torch.Tensor  # [B,N,K] bool
    match: torch.Tensor        # [B,N,Lc+H] float 0/1
    scr_ids: torch.Tensor      # [B,S]
    scr_node: torch.Tensor
    scr_pos: torch.Tensor
    scr_mask: torch.Tensor
    cand_a: torch.Tensor       # [B,C] reference rows
    cand_b: torch.Tensor
    cand_feats: torch.Tensor   # [B,C,CAND_FEATS]
    cand_use: torch.Tensor     # [B,C,3] bool
    kind_mask: torch.Tensor    # [B,K] bool
    arrays: dict | None = None
    """The numpy arrays the tensors share memory with (:func:`collate`), if any."""


def _spots(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(state, position) of every row of states with ``lens`` rows each, in order."""
    rows = np.repeat(np.arange(len(lens)), lens)
    return rows, np.arange(len(rows)) - np.repeat(np.cumsum(lens) - lens, lens)


def collate_arrays(states: list[Encoded]) -> dict[str, np.ndarray]:
    """Pad a list of states into one batch: numpy arrays by :class:`Collated` field, each
    filled with one concatenation and one indexed assignment (no loop over the states but
    for the id rows, whose widths differ)."""
    B = len(states)
    i64, f32 = np.int64, np.float32
    n = np.fromiter((len(s.ctx_ids) for s in states), i64, B)
    h = np.fromiter((len(s.hist_kind) for s in states), i64, B)
    m = np.fromiter((len(s.node_role) for s in states), i64, B)
    q = np.fromiter((len(s.scr_ids) for s in states), i64, B)
    c = np.fromiter((len(s.cand_a) for s in states), i64, B)
    Lc, H, N, S, C = (max(1, int(x.max())) for x in (n, h, m, q, c))
    Lh = max(s.hist_ids.shape[1] for s in states)
    Ll = max(s.node_label_ids.shape[1] for s in states)
    Lv = max(s.node_value_ids.shape[1] for s in states)
    o: dict[str, np.ndarray] = {}

    def fill(name: str, spots, shape: tuple, dtype, attr: str | None = None) -> None:
        a = o[name] = np.zeros((B,) + shape, dtype)
        a[spots] = np.concatenate([getattr(s, attr or name) for s in states])

    def mask(name: str, spots, L: int) -> None:
        a = o[name] = np.zeros((B, L), bool)
        a[spots] = True

    sc, sh, sn, ss, sk = _spots(n), _spots(h), _spots(m), _spots(q), _spots(c)
    for k in ("ctx_ids", "ctx_seg", "ctx_pos"):
        fill(k, sc, (Lc,), i64)
    fill("ctx_feats", sc, (Lc, CTX_FEATS), f32)
    mask("ctx_mask", sc, Lc)
    fill("hist_kind", sh, (H,), i64)
    o["hist_ids"] = np.zeros((B, H, Lh), i64)
    fill("hist_feats", sh, (H, HIST_FEATS), f32)
    mask("hist_mask", sh, H)
    o["glob"] = np.stack([s.glob for s in states]).astype(f32, copy=False)
    fill("node_role", sn, (N,), i64)
    o["node_label"], o["node_value"] = np.zeros((B, N, Ll), i64), np.zeros((B, N, Lv), i64)
    for i, s in enumerate(states):
        o["hist_ids"][i, :h[i], :s.hist_ids.shape[1]] = s.hist_ids
        o["node_label"][i, :m[i], :s.node_label_ids.shape[1]] = s.node_label_ids
        o["node_value"][i, :m[i], :s.node_value_ids.shape[1]] = s.node_value_ids
    fill("node_feats", sn, (N, NODE_FEATS), f32)
    mask("node_mask", sn, N)
    fill("node_accept", sn, (N, K), bool)
    match = o["match"] = np.zeros((B, N, Lc + H), f32)
    for attr, shift in (("match_ctx", 0), ("match_hist", Lc)):
        lens = np.fromiter((len(getattr(s, attr)) for s in states), i64, B)
        if lens.any():
            pairs = np.concatenate([getattr(s, attr) for s in states])
            match[np.repeat(np.arange(B), lens), pairs[:, 0], shift + pairs[:, 1]] = 1.0
    for k in ("scr_ids", "scr_node", "scr_pos"):
        fill(k, ss, (S,), i64)
    mask("scr_mask", ss, S)
    # reference rows: the state's [ctx (n) | screen pieces (q) | fixed] -> the batch's [Lc | S | 2]
    nr, qr = np.repeat(n, c), np.repeat(q, c)
    for k in ("cand_a", "cand_b"):
        r = np.concatenate([getattr(s, k) for s in states])
        a = o[k] = np.zeros((B, C), i64)
        a[sk] = np.where(r < nr, r, np.where(r < nr + qr, Lc + r - nr, Lc + S + r - nr - qr))
    fill("cand_feats", sk, (C, CAND_FEATS), f32)
    fill("cand_use", sk, (C, 3), bool)
    o["kind_mask"] = np.stack([s.kind_mask for s in states]).astype(bool, copy=False)
    return o


def collate(states: list[Encoded]) -> Collated:
    """Pad a list of states into one batch (:func:`collate_arrays`, one tensor per field)."""
    o = collate_arrays(states)
    return Collated(**{k: torch.from_numpy(v) for k, v in o.items()}, arrays=o)


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
        for i in range(j):
            c = best[i] + overhead + (j - i) * t * (1 + t / 256)
            if c < best[j]:
                best[j], cut[j] = c, i
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

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """x [B,T,D]; bias [B,h,T,T] additive attention bias (padding = -inf-like)."""
        B, T, D = x.shape
        h, dh = self.h, D // self.h
        qkv = self.qkv(self.ln1(x)).view(B, T, 3, h, dh).permute(2, 0, 3, 1, 4).reshape(3, B * h, T, dh)
        # softmax(q k^T / sqrt(dh) + bias) v, as scaled_dot_product_attention (fewer, larger ops)
        s = torch.baddbmm(bias.reshape(B * h, T, T), qkv[0], qkv[1].transpose(1, 2), alpha=1 / math.sqrt(dh))
        a = torch.bmm(torch.softmax(s, -1), qkv[2])                                  # [B*h,T,dh]
        x = x + self.proj(a.view(B, h, T, dh).transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.ln2(x))


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
        self.hist_kind = nn.Embedding(K, d)
        self.hist_pos = nn.Embedding(8, d)
        self.hist_in = nn.Linear(HIST_FEATS, d)
        self.role = nn.Embedding(len(ROLES), d)
        self.node_in = nn.Linear(NODE_FEATS, d)
        self.value_in = nn.Linear(d, d, bias=False)
        self.glob_in = nn.Linear(GLOBAL_FEATS, d)
        self.cls = nn.Parameter(torch.zeros(d))
        self.etype = nn.Embedding(4, d)   # cls, ctx, hist, node
        self.layers = nn.ModuleList(_Layer(d, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.match_w = nn.Parameter(torch.full((cfg.n_layers, cfg.n_heads), 1.0))
        self.ln = nn.LayerNorm(d)
        self.kind_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, K))
        self.node_head = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, K))
        self.kind_emb = nn.Embedding(K, d)
        self.span_q = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, 2 * d))
        self.scr_node = nn.Linear(d, d)
        self.scr_pos = nn.Embedding(32, d)
        self.fixed = nn.Embedding(2, d)
        self.cand_w = nn.Sequential(nn.Linear(CAND_FEATS + K, d), nn.GELU(), nn.Linear(d, 1))
        self.frame_head = nn.Sequential(nn.Linear(3 * d, d), nn.GELU(), nn.Linear(d, cfg.max_frames))

    def embed(self, ids: torch.Tensor, table: torch.Tensor | None = None) -> torch.Tensor:
        """Piece ids [...] -> [..., D]: UI words learnt, entities fixed placeholders (ids
        ``vocab_size + j``): one look-up in the words' table followed by the placeholders'
        (:meth:`_table`; a placeholder row gets no gradient, nor does padding)."""
        return F.embedding(ids, self._table() if table is None else table, padding_idx=0)

    def _table(self) -> torch.Tensor:
        return torch.cat([self.word.weight, self.placeholders])

    def _bag(self, ids: torch.Tensor, table: torch.Tensor | None = None) -> torch.Tensor:
        """Mean of piece embeddings over the last axis, padding (0) excluded."""
        m = (ids > 0).float()[..., None]
        return (self.embed(ids, table) * m).sum(-2) / m.sum(-2).clamp(min=1.0)

    def encode(self, c: Collated):
        """-> (cls [B,D], ctx [B,Lc,D], nodes [B,N,D])."""
        B, Lc = c.ctx_ids.shape
        H = c.hist_kind.shape[1]
        tb = self._table()
        ctx = (self.embed(c.ctx_ids, tb) + self.seg(c.ctx_seg) + self.cpos(c.ctx_pos) + self.ctx_in(c.ctx_feats)
               + self.etype.weight[1])
        hist = (self.hist_kind(c.hist_kind) + self._bag(c.hist_ids, tb) + self.hist_in(c.hist_feats)
                + self.hist_pos(torch.arange(H).clamp(max=7))[None] + self.etype.weight[2])
        node = (self.role(c.node_role) + self._bag(c.node_label, tb) + self.value_in(self._bag(c.node_value, tb))
                + self.node_in(c.node_feats) + self.etype.weight[3])
        cls = (self.cls + self.glob_in(c.glob) + self.etype.weight[0])[:, None]
        x = torch.cat([cls, ctx, hist, node], dim=1)                               # [B,T,D]
        T = x.shape[1]
        keep = torch.cat([torch.ones(B, 1, dtype=torch.bool), c.ctx_mask, c.hist_mask, c.node_mask], dim=1)
        pad = torch.zeros(B, 1, 1, T).masked_fill(~keep[:, None, None, :], NEG)
        # node <-> goal-piece / history-target matches bias attention both ways
        M = torch.zeros(B, T, T)
        n0, c0 = 1 + Lc + H, 1
        M[:, n0:, c0:c0 + Lc + H] = c.match
        M[:, c0:c0 + Lc + H, n0:] = c.match.transpose(1, 2)
        for li, layer in enumerate(self.layers):
            bias = pad + M[:, None] * self.match_w[li][None, :, None, None]
            x = layer(x, bias)
        x = self.ln(x)
        return x[:, 0], x[:, 1:1 + Lc], x[:, n0:]

    def encode_bucketed(self, c: Collated):
        """:meth:`encode` of a padded batch with no work on padding but in attention: the
        token-wise layers (embeddings, layer norms, projections, feed-forward) run once over
        the batch's real tokens packed together, attention in groups of states of similar
        length (:func:`size_buckets`), each padded to its longest. The same values (a padded
        key only ever met a -1e9 bias: its weight is exactly 0), returned in the batch's
        shapes; rows of padding come back as zeros (the heads mask them)."""
        o = c.arrays
        if o is None:
            return self.encode(c)
        B, Lc = c.ctx_ids.shape
        N = c.node_role.shape[1]
        D, h = self.cfg.d_model, self.cfg.n_heads
        dh = D // h
        cm, hm, nm = o["ctx_mask"], o["hist_mask"], o["node_mask"]
        lc_i, h_i, n_i = cm.sum(1), hm.sum(1), nm.sum(1)
        t_i = 1 + lc_i + h_i + n_i
        if B == 1:   # nothing to pack
            return self.encode(c)
        groups = size_buckets(t_i.tolist())
        order = np.concatenate([np.asarray(g, np.int64) for g in groups])   # states, bucket by bucket
        # packed rows: state by state in ``order``, each [cls, its ctx, its hist, its nodes]
        start = np.empty(B, np.int64)
        start[order] = np.cumsum(t_i[order]) - t_i[order]
        total = int(t_i.sum())
        b_c, j_c = np.nonzero(cm)
        b_h, j_h = np.nonzero(hm)
        b_n, j_n = np.nonzero(nm)
        r_c, r_h, r_n = start[b_c] + 1 + j_c, start[b_h] + 1 + lc_i[b_h] + j_h, start[b_n] + 1 + lc_i[b_n] + h_i[b_n] + j_n
        t = torch.from_numpy
        tb = self._table()
        ctx = (self.embed(t(o["ctx_ids"][b_c, j_c]), tb) + self.seg(t(o["ctx_seg"][b_c, j_c]))
               + self.cpos(t(o["ctx_pos"][b_c, j_c])) + self.ctx_in(t(o["ctx_feats"][b_c, j_c])) + self.etype.weight[1])
        hist = (self.hist_kind(t(o["hist_kind"][b_h, j_h])) + self._bag(t(o["hist_ids"][b_h, j_h]), tb)
                + self.hist_in(t(o["hist_feats"][b_h, j_h])) + self.hist_pos(t(np.minimum(j_h, 7)))
                + self.etype.weight[2])
        node = (self.role(t(o["node_role"][b_n, j_n])) + self._bag(t(o["node_label"][b_n, j_n]), tb)
                + self.value_in(self._bag(t(o["node_value"][b_n, j_n]), tb)) + self.node_in(t(o["node_feats"][b_n, j_n]))
                + self.etype.weight[3])
        cls = self.cls + self.glob_in(c.glob) + self.etype.weight[0]
        rows = t(np.concatenate([start, r_c, r_h, r_n]))
        x = torch.empty(total, D).index_put((rows,), torch.cat([cls, ctx, hist, node]))   # [R,D]
        # each group's padded layout [cls | ctx lc | hist hh | nodes n] -> packed row (or R: a zero row)
        plan = []
        for g in groups:
            ix = np.asarray(g, np.int64)
            lc, hh, n = (max(1, int(v[ix].max())) for v in (lc_i, h_i, n_i))
            T = 1 + lc + hh + n
            src = np.full((len(ix), T), total, np.int64)
            src[:, 0] = start[ix]
            for off, L, li in ((1, lc, lc_i), (1 + lc, hh, h_i), (1 + lc + hh, n, n_i)):
                k = np.arange(L)
                ok = k[None] < li[ix][:, None]
                first = start[ix][:, None] + 1 + (0 if off == 1 else lc_i[ix][:, None]) + \
                    (h_i[ix][:, None] if off == 1 + lc + hh else 0)
                src[:, off:off + L] = np.where(ok, first + k[None], total)
            keep = src < total
            pad = np.where(keep, 0.0, NEG).astype(np.float32)[:, None, None, :]
            M = np.zeros((len(ix), T, T), np.float32)
            mt = np.concatenate([o["match"][ix, :n, :lc], o["match"][ix, :n, Lc:Lc + hh]], 2)
            n0 = 1 + lc + hh
            M[:, n0:, 1:n0] = mt
            M[:, 1:n0, n0:] = mt.transpose(0, 2, 1)
            plan.append((len(ix), T, t(src.reshape(-1)), t(np.flatnonzero(keep.reshape(-1))), t(pad), t(M)))
        zero = torch.zeros(1, 3 * D)
        for li, layer in enumerate(self.layers):
            w = self.match_w[li][None, :, None, None]
            qkv = torch.cat([layer.qkv(layer.ln1(x)), zero])                             # [R+1,3D]
            outs = []
            for Bg, T, src, kept, pad, M in plan:
                q = qkv[src].view(Bg, T, 3, h, dh).permute(2, 0, 3, 1, 4).reshape(3, Bg * h, T, dh)
                bias = (pad + M[:, None] * w).reshape(Bg * h, T, T)
                sc = torch.baddbmm(bias, q[0], q[1].transpose(1, 2), alpha=1 / math.sqrt(dh))
                a = torch.bmm(torch.softmax(sc, -1), q[2]).view(Bg, h, T, dh).transpose(1, 2).reshape(Bg * T, D)
                outs.append(a[kept])
            x = x + layer.proj(torch.cat(outs))
            x = x + layer.ff(layer.ln2(x))
        x = self.ln(x)
        cls_o = x[t(start)]
        ctx_o = torch.zeros(B, Lc, D).index_put((t(b_c), t(j_c)), x[t(r_c)])
        nodes_o = torch.zeros(B, N, D).index_put((t(b_n), t(j_n)), x[t(r_n)])
        return cls_o, ctx_o, nodes_o

    # ------------------------------------------------------------------ heads (logits, masked)
    def kind_logits(self, cls: torch.Tensor, c: Collated) -> torch.Tensor:
        return self.kind_head(cls).masked_fill(~c.kind_mask, NEG)                   # [B,K]

    def node_logits(self, cls, nodes, c: Collated, kind: torch.Tensor) -> torch.Tensor:
        """Node pointer for the chosen kinds [B] -> [B,N] (masked to nodes accepting the kind)."""
        N = nodes.shape[1]
        s = self.node_head(torch.cat([nodes, cls[:, None].expand(-1, N, -1)], -1))   # [B,N,K]
        s = s.gather(2, kind[:, None, None].expand(-1, N, 1)).squeeze(2)
        ok = c.node_accept.gather(2, kind[:, None, None].expand(-1, N, 1)).squeeze(2) & c.node_mask
        return s.masked_fill(~ok, NEG)

    def cand_logits(self, cls, ctx, nodes, c: Collated, kind: torch.Tensor, use: torch.Tensor):
        """Text-span pointer for the chosen kinds [B]; ``use`` [B] 0 type / 1 answer / 2 ask.
        Returns logits [B,C] and the reference rows [B,R,D] (spans' first/last pieces)."""
        B, D = cls.shape
        scr = (self.embed(c.scr_ids) + self.scr_node(nodes.gather(1, c.scr_node[..., None].expand(-1, -1, D)))
               + self.scr_pos(c.scr_pos))
        ref = torch.cat([ctx, scr, self.fixed.weight[None].expand(B, -1, -1)], dim=1)   # [B,Lc+S+2,D]
        q = self.span_q(torch.cat([cls, self.kind_emb(kind)], -1))
        qs, qe = q[:, :D], q[:, D:]
        st = (ref @ qs[:, :, None]).squeeze(-1) / math.sqrt(D)
        en = (ref @ qe[:, :, None]).squeeze(-1) / math.sqrt(D)
        C = c.cand_a.shape[1]
        onehot = F.one_hot(kind, K).float()[:, None].expand(-1, C, -1)
        s = st.gather(1, c.cand_a) + en.gather(1, c.cand_b) + self.cand_w(torch.cat([c.cand_feats, onehot], -1)).squeeze(-1)
        ok = c.cand_use.gather(2, use[:, None, None].expand(-1, C, 1)).squeeze(2)
        return s.masked_fill(~ok, NEG), ref

    def frame_logits(self, cls: torch.Tensor, ref: torch.Tensor, c: Collated, cand: torch.Tensor,
                     n_frames: int) -> torch.Tensor:
        """Question frame given the chosen subject span ``cand`` [B] -> [B,F]."""
        D = cls.shape[1]
        a = c.cand_a.gather(1, cand[:, None])
        b = c.cand_b.gather(1, cand[:, None])
        ra = ref.gather(1, a[..., None].expand(-1, 1, D)).squeeze(1)
        rb = ref.gather(1, b[..., None].expand(-1, 1, D)).squeeze(1)
        f = self.frame_head(torch.cat([cls, ra, rb], -1))
        if n_frames < f.shape[1]:
            f = f.masked_fill(torch.arange(f.shape[1])[None] >= n_frames, NEG)
        return f
