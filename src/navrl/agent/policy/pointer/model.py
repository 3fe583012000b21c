"""The pointer network: a small permutation-invariant encoder over [state; goal; history;
nodes] with factorised heads (kind, node pointer, text-span pointer, question frame).

Shapes: B states; Lc goal/answer pieces; H history steps; N nodes; S screen pieces;
C text candidates; K kinds; F question frames; D model width.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from navrl.agent.policy.pointer.features import (CAND_FEATS, CTX_FEATS, GLOBAL_FEATS, HIST_FEATS, K, NODE_FEATS,
                                                 N_PLACEHOLDERS, ROLES, Encoded)

NEG = -1e9


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


def _pad2(rows: list[list[int]], fill: int = 0) -> torch.Tensor:
    L = max(1, max((len(r) for r in rows), default=1))
    out = torch.full((len(rows), L), fill, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            out[i, :len(r)] = torch.tensor(r)
    return out


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
    n_ctx: int
    n_scr: int


def collate(states: list[Encoded]) -> Collated:
    B = len(states)
    Lc = max(1, max(len(s.ctx_ids) for s in states))
    H = max(1, max(len(s.hist_kind) for s in states))
    N = max(1, max(len(s.node_role) for s in states))
    S = max(1, max(len(s.scr_ids) for s in states))
    C = max(1, max(len(s.cands) for s in states))
    Lh = max(1, max((len(h) for s in states for h in s.hist_ids), default=1))
    Ll = max(1, max((len(h) for s in states for h in s.node_label_ids), default=1))
    Lv = max(1, max((len(h) for s in states for h in s.node_value_ids), default=1))
    z = lambda *shape: torch.zeros(*shape, dtype=torch.long)   # noqa: E731
    o = Collated(z(B, Lc), z(B, Lc), z(B, Lc), torch.zeros(B, Lc, CTX_FEATS), torch.zeros(B, Lc, dtype=torch.bool),
                 z(B, H), z(B, H, Lh), torch.zeros(B, H, HIST_FEATS), torch.zeros(B, H, dtype=torch.bool),
                 torch.zeros(B, GLOBAL_FEATS), z(B, N), z(B, N, Ll), z(B, N, Lv), torch.zeros(B, N, NODE_FEATS),
                 torch.zeros(B, N, dtype=torch.bool), torch.zeros(B, N, K, dtype=torch.bool),
                 torch.zeros(B, N, Lc + H), z(B, S), z(B, S), z(B, S), torch.zeros(B, S, dtype=torch.bool),
                 z(B, C), z(B, C), torch.zeros(B, C, CAND_FEATS), torch.zeros(B, C, 3, dtype=torch.bool),
                 torch.zeros(B, K, dtype=torch.bool), Lc, S)
    for i, s in enumerate(states):
        n = len(s.ctx_ids)
        if n:
            o.ctx_ids[i, :n] = torch.tensor(s.ctx_ids)
            o.ctx_seg[i, :n] = torch.tensor(s.ctx_seg)
            o.ctx_pos[i, :n] = torch.tensor(s.ctx_pos)
            o.ctx_feats[i, :n] = torch.tensor(s.ctx_feats)
            o.ctx_mask[i, :n] = True
        h = len(s.hist_kind)
        if h:
            o.hist_kind[i, :h] = torch.tensor(s.hist_kind)
            hp = _pad2(s.hist_ids)
            o.hist_ids[i, :h, :hp.shape[1]] = hp
            o.hist_feats[i, :h] = torch.tensor(s.hist_feats)
            o.hist_mask[i, :h] = True
        o.glob[i] = torch.tensor(s.glob)
        m = len(s.node_role)
        if m:
            o.node_role[i, :m] = torch.tensor(s.node_role)
            lab = _pad2(s.node_label_ids)
            o.node_label[i, :m, :lab.shape[1]] = lab
            val = _pad2(s.node_value_ids)
            o.node_value[i, :m, :val.shape[1]] = val
            o.node_feats[i, :m] = torch.tensor(s.node_feats)
            o.node_mask[i, :m] = True
            o.node_accept[i, :m] = torch.tensor(s.node_accept)
        for a, c in s.match_ctx:
            o.match[i, a, c] = 1.0
        for a, k in s.match_hist:
            o.match[i, a, Lc + k] = 1.0
        q = len(s.scr_ids)
        if q:
            o.scr_ids[i, :q] = torch.tensor(s.scr_ids)
            o.scr_node[i, :q] = torch.tensor(s.scr_node)
            o.scr_pos[i, :q] = torch.tensor(s.scr_pos)
            o.scr_mask[i, :q] = True
        # reference rows: [ctx (n) | screen pieces (q) | fixed answers] -> [Lc | S | 2] in the batch layout
        ctx_n = len(s.ctx_ids)

        def row(r: int) -> int:
            if r < ctx_n:
                return r
            if r < ctx_n + q:
                return Lc + (r - ctx_n)
            return Lc + S + (r - ctx_n - q)
        if s.cands:
            c = len(s.cands)
            o.cand_a[i, :c] = torch.tensor([row(x.a) for x in s.cands])
            o.cand_b[i, :c] = torch.tensor([row(x.b) for x in s.cands])
            o.cand_feats[i, :c] = torch.tensor([x.feats for x in s.cands])
            o.cand_use[i, :c] = torch.tensor([x.usable for x in s.cands])
        o.kind_mask[i] = torch.tensor(s.kind_mask)
    return o


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
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.ln2(x))


class PointerNet(nn.Module):
    def __init__(self, cfg: PointerConfig, vocab_size: int, seed: int = 0):
        super().__init__()
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
        self.frame_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, cfg.max_frames))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Piece ids [...] -> [..., D]: UI words learnt, entities fixed placeholders."""
        is_ph = ids >= self.vocab_size
        w = self.word(ids.clamp(max=self.vocab_size - 1) * (~is_ph))
        p = self.placeholders[(ids - self.vocab_size).clamp(min=0, max=N_PLACEHOLDERS - 1)]
        return torch.where(is_ph[..., None], p, w)

    def _bag(self, ids: torch.Tensor) -> torch.Tensor:
        """Mean of piece embeddings over the last axis, padding (0) excluded."""
        m = (ids > 0).float()[..., None]
        return (self.embed(ids) * m).sum(-2) / m.sum(-2).clamp(min=1.0)

    def encode(self, c: Collated):
        """-> (cls [B,D], ctx [B,Lc,D], nodes [B,N,D])."""
        B, Lc = c.ctx_ids.shape
        H, N = c.hist_kind.shape[1], c.node_role.shape[1]
        ctx = (self.embed(c.ctx_ids) + self.seg(c.ctx_seg) + self.cpos(c.ctx_pos) + self.ctx_in(c.ctx_feats)
               + self.etype.weight[1])
        hist = (self.hist_kind(c.hist_kind) + self._bag(c.hist_ids) + self.hist_in(c.hist_feats)
                + self.hist_pos(torch.arange(H).clamp(max=7))[None] + self.etype.weight[2])
        node = (self.role(c.node_role) + self._bag(c.node_label) + self.value_in(self._bag(c.node_value))
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

    def cand_logits(self, cls, ctx, nodes, c: Collated, kind: torch.Tensor, use: torch.Tensor) -> torch.Tensor:
        """Text-span pointer for the chosen kinds [B]; ``use`` [B] 0 type / 1 answer / 2 ask -> [B,C]."""
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
        return s.masked_fill(~ok, NEG)

    def frame_logits(self, cls: torch.Tensor, n_frames: int) -> torch.Tensor:
        f = self.frame_head(cls)
        if n_frames < f.shape[1]:
            f = f.masked_fill(torch.arange(f.shape[1])[None] >= n_frames, NEG)
        return f
