"""The tiny planner: a small decoder-only transformer trained from scratch on CPU.

It reads a compact text prompt (task, user answers, recent steps, remaining plan, the UI
tree as text) and writes ``Reasoning / Step / Remaining``. Batched generation with a KV
cache returns per-token log-probs; the hidden state at the last prompt token feeds the
critic (:mod:`navrl.rl.value_head`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from tokenizers import Tokenizer

from navrl.agent.planner import PlannerContext, PlannerOutput
from navrl.agent.policy.base import Policy, ScoredBatch
from navrl.agent.policy.tiny_config import TinyConfig
from navrl.agent.policy.tokenizer import BOS, EOS, PAD, SEP
from navrl.agent.prompt import PromptConfig, build_prompt


class _Block(nn.Module):
    def __init__(self, c: TinyConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)
        self.ff = nn.Sequential(nn.Linear(c.d_model, c.d_ff), nn.GELU(), nn.Linear(c.d_ff, c.d_model))
        self.h = c.n_heads

    def forward(self, x: torch.Tensor, mask: torch.Tensor, cache: tuple | None = None):
        """x [B,T,D]; mask [B,1,T,S] bool (True = attend); cache (k,v) [B,H,S-T,Dh]."""
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        x = x + self.ff(self.ln2(x))
        return x, (k, v)


class TinyLM(nn.Module):
    def __init__(self, c: TinyConfig):
        super().__init__()
        self.c = c
        self.tok = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Embedding(c.max_len, c.d_model)
        self.blocks = nn.ModuleList(_Block(c) for _ in range(c.n_layers))
        self.ln = nn.LayerNorm(c.d_model)
        self.copy_q = nn.Linear(c.d_model, c.d_model)
        self.copy_k = nn.Linear(c.d_model, c.d_model)
        self.copy_gate = nn.Linear(c.d_model, 1)
        self.copy_prev = nn.Linear(c.d_model, c.d_model, bias=False) if c.copy_prev_token else None
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor, caches=None):
        """ids, pos [B,T]; mask [B,1,T,S]. Returns hidden [B,T,D] and new caches."""
        x = self.tok(ids) + self.pos(pos.clamp(0, self.c.max_len - 1))
        new = []
        for i, b in enumerate(self.blocks):
            x, kv = b(x, mask, caches[i] if caches is not None else None)
            new.append(kv)
        return self.ln(x), new

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return h @ self.tok.weight.T   # tied embeddings

    def copy_keys(self, hk: torch.Tensor, ids_k: torch.Tensor) -> torch.Tensor:
        """Copy-head keys [B,S,D] of prompt positions: hidden state (+ previous token id)."""
        k = self.copy_k(hk)
        if self.copy_prev is not None:
            prev = torch.cat([ids_k[:, :1], ids_k[:, :-1]], dim=1)
            k = k + self.copy_prev(self.tok(prev))
        return k

    def target_logp(self, hq: torch.Tensor, hk: torch.Tensor, ids_k: torch.Tensor, keymask: torch.Tensor,
                    tgt: torch.Tensor) -> torch.Tensor:
        """log p(tgt) under the same mixture as :meth:`next_logp`, without building the
        [B,Tq,V] mixture: only a logsumexp over the vocabulary. tgt [B,Tq] -> [B,Tq]."""
        logits = self.logits(hq).float()
        vocab_lp = logits.gather(-1, tgt[..., None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        sc = (self.copy_q(hq) @ self.copy_keys(hk, ids_k).transpose(1, 2)).float() / math.sqrt(hq.shape[-1])
        sc = sc.masked_fill(~keymask, float("-inf"))
        attn = torch.softmax(sc, dim=-1).nan_to_num(0.0)
        copy_p = (attn * (ids_k[:, None, :] == tgt[:, :, None])).sum(-1)
        g = torch.sigmoid(self.copy_gate(hq).float()).squeeze(-1)
        return torch.logaddexp(torch.log1p(-g + 1e-6) + vocab_lp, torch.log(g + 1e-6) + torch.log(copy_p.clamp_min(1e-12)))

    def tempered_target_logp(self, hq: torch.Tensor, hk: torch.Tensor, ids_k: torch.Tensor, keymask: torch.Tensor,
                             tgt: torch.Tensor, temperature: float) -> torch.Tensor:
        """log softmax(log p / T)[tgt] for the mixture of :meth:`next_logp`, without building
        the [B,Tq,V] mixture (the update scores every rollout output at the rollout temperature).

        With beta = 1/T the normaliser is Z = sum_v p_v^beta. Outside the token ids present
        in the sequence the copy term is zero, so those tokens contribute
        (1-g)^beta * (sum_v s_v^beta - sum_{u in ids} s_u^beta), a logsumexp of the logits;
        the ids present (U <= S per row) are added with their full mixture. Same inputs as
        :meth:`target_logp`; returns [B,Tq]."""
        beta = 1.0 / temperature
        B, Tq, S = keymask.shape[0], hq.shape[1], ids_k.shape[1]
        logits = self.logits(hq).float()                                        # [B,Tq,V]
        lse = torch.logsumexp(logits, dim=-1)                                   # [B,Tq]
        sc = (self.copy_q(hq) @ self.copy_keys(hk, ids_k).transpose(1, 2)).float() / math.sqrt(hq.shape[-1])
        attn = torch.softmax(sc.masked_fill(~keymask, float("-inf")), dim=-1).nan_to_num(0.0)  # [B,Tq,S]
        g = torch.sigmoid(self.copy_gate(hq).float()).squeeze(-1)
        lg1, lgg = torch.log1p(-g + 1e-6), torch.log(g + 1e-6)                  # as in next_logp
        # the distinct ids of each row, and where each position's id sits among them
        uniq = [torch.unique(ids_k[b], return_inverse=True) for b in range(B)]
        U = max(len(u) for u, _ in uniq)
        uid = torch.zeros(B, U, dtype=torch.long)
        valid = torch.zeros(B, U, dtype=torch.bool)
        inv = torch.empty(B, S, dtype=torch.long)
        for b, (u, i) in enumerate(uniq):
            uid[b, :len(u)], valid[b, :len(u)], inv[b] = u, True, i
        copy_u = torch.zeros(B, Tq, U).scatter_add_(2, inv[:, None, :].expand(B, Tq, S), attn)  # [B,Tq,U]
        log_s_u = logits.gather(2, uid[:, None, :].expand(B, Tq, U)) - lse[..., None]
        log_p_u = torch.logaddexp(lg1[..., None] + log_s_u, lgg[..., None] + torch.log(copy_u.clamp_min(1e-12)))
        # log of the vocabulary-only part summed over all v, and the ids' two versions of it
        log_rest = beta * lg1 + torch.logsumexp(beta * logits, dim=-1) - beta * lse        # [B,Tq]
        with_copy = (beta * log_p_u).double().masked_fill(~valid[:, None, :], float("-inf"))
        without = (beta * (lg1[..., None] + log_s_u)).double().masked_fill(~valid[:, None, :], float("-inf"))
        M = torch.maximum(log_rest.double(), with_copy.amax(-1)).detach()
        z = ((log_rest.double() - M).exp() + ((with_copy - M[..., None]).exp()
             - (without - M[..., None]).exp()).sum(-1))
        log_z = (M + torch.log(z.clamp_min(1e-300))).float()
        vocab_lp = logits.gather(-1, tgt[..., None]).squeeze(-1) - lse
        copy_p = (attn * (ids_k[:, None, :] == tgt[:, :, None])).sum(-1)
        log_p = torch.logaddexp(lg1 + vocab_lp, lgg + torch.log(copy_p.clamp_min(1e-12)))   # = target_logp
        return beta * log_p - log_z

    def next_logp(self, hq: torch.Tensor, hk: torch.Tensor, ids_k: torch.Tensor, keymask: torch.Tensor,
                  keys: torch.Tensor | None = None):
        """Next-token log-probs with a copy head (pointer-generator).

        The planner mostly repeats labels it sees on screen; a from-scratch model learns
        to copy through attention only after many thousand steps, far beyond a CPU budget.
        A copy head — one attention over earlier positions whose weights are scattered
        onto those positions' token ids — mixed with the vocabulary softmax by a learned
        gate makes copying a one-layer decision. The result is still one normalised
        distribution per step, so sampling, log-probs and PPO ratios are exact.

        hq [B,Tq,D] queries; hk [B,S,D] keys (hidden states of earlier positions);
        ids_k [B,S] their token ids; keymask [B,Tq,S] bool (True = may copy from);
        keys [B,S,D] precomputed :meth:`copy_keys` (generation reuses them per token).
        Returns logp [B,Tq,V].
        """
        vocab_logp = torch.log_softmax(self.logits(hq).float(), dim=-1)
        keys = self.copy_keys(hk, ids_k) if keys is None else keys
        sc = (self.copy_q(hq) @ keys.transpose(1, 2)).float() / math.sqrt(hq.shape[-1])
        sc = sc.masked_fill(~keymask, float("-inf"))
        attn = torch.softmax(sc, dim=-1).nan_to_num(0.0)
        copy_p = torch.zeros_like(vocab_logp).scatter_add_(
            2, ids_k[:, None, :].expand(-1, hq.shape[1], -1), attn)
        g = torch.sigmoid(self.copy_gate(hq).float())
        return torch.logaddexp(torch.log1p(-g + 1e-6) + vocab_logp,
                               torch.log(g + 1e-6) + torch.log(copy_p.clamp_min(1e-12)))


class TinyPlanner(Policy):
    """The CPU-default planner policy."""

    name = "tiny"

    def __init__(self, tokenizer: Tokenizer, config: TinyConfig | None = None, seed: int = 0):
        c = config or TinyConfig()
        c = TinyConfig(**{**asdict(c), "vocab_size": tokenizer.get_vocab_size()})
        self.config = c
        self.tokenizer = tokenizer
        torch.manual_seed(seed)
        self.model = TinyLM(c)
        self.pad, self.bos = tokenizer.token_to_id(PAD), tokenizer.token_to_id(BOS)
        self.sep, self.eos = tokenizer.token_to_id(SEP), tokenizer.token_to_id(EOS)
        self.prompt_cfg = PromptConfig(max_history=c.history, max_ui_lines=c.ui_lines, include_reasoning=False,
                                       compact=True)
        self.generator = torch.Generator().manual_seed(seed)
        self.sample = True
        self.temperature = 1.0
        self.critic = None   # set by the trainer: maps state [N,H] -> value [N]
        self.entropy_in_score = False
        """score() also returns per-token entropies (needed only for an entropy bonus)."""

    # ------------------------------------------------------------------ Policy
    @property
    def state_dim(self) -> int:
        return self.config.d_model

    def policy_parameters(self) -> list[nn.Parameter]:
        return list(self.model.parameters())

    def prompt_text(self, ctx: PlannerContext) -> str:
        return build_prompt(ctx, self.prompt_cfg)

    def encode_prompt(self, text: str) -> list[int]:
        ids = [self.bos] + self.tokenizer.encode(text).ids + [self.sep]
        keep = self.config.max_len - self.config.max_new_tokens
        return ids[-keep:] if len(ids) > keep else ids

    def encode_target(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids[: self.config.max_new_tokens - 1] + [self.eos]

    def decode(self, ids: list[int]) -> str:
        ids = [i for i in ids if i not in (self.eos, self.pad)]
        return self.tokenizer.decode(ids)

    def state_dict_all(self) -> dict:
        return {"model": self.model.state_dict(), "config": asdict(self.config),
                "tokenizer": self.tokenizer.to_str(), "generator": self.generator.get_state()}

    def load_state_dict_all(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        if "generator" in state:
            self.generator.set_state(state["generator"])

    @staticmethod
    def from_state(state: dict) -> "TinyPlanner":
        tok = Tokenizer.from_str(state["tokenizer"])
        # checkpoints from before copy_prev_token have no such weights
        cfg = {"copy_prev_token": any(k.startswith("copy_prev.") for k in state["model"]), **state["config"]}
        p = TinyPlanner(tok, TinyConfig(**cfg))
        p.load_state_dict_all(state)
        return p

    # ------------------------------------------------------------------ batching helpers
    def _left_pad(self, seqs: list[list[int]]):
        L = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), L), self.pad, dtype=torch.long)
        att = torch.zeros((len(seqs), L), dtype=torch.bool)
        for i, s in enumerate(seqs):
            ids[i, L - len(s):] = torch.tensor(s)
            att[i, L - len(s):] = True
        pos = (att.long().cumsum(1) - 1).clamp(min=0)
        return ids, att, pos

    @staticmethod
    def _mask(att_keys: torch.Tensor, T: int) -> torch.Tensor:
        """[B,1,T,S]: causal over the last T of S keys, and no padding keys."""
        B, S = att_keys.shape
        causal = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        m = causal[None, None] & att_keys[:, None, None, :]
        # a fully masked row (a padding query) would give NaN: let it see itself
        eye = torch.zeros(T, S, dtype=torch.bool)
        eye[torch.arange(T), torch.arange(S - T, S)] = True
        return m | eye[None, None]

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        if not contexts:
            return []
        self.model.eval()
        prompts = [self.prompt_text(c) for c in contexts]
        seqs = [self.encode_prompt(p) for p in prompts]
        ids, att, pos = self._left_pad(seqs)
        B, Lp = ids.shape
        h, caches = self.model(ids, pos, self._mask(att, Lp))
        state = h[:, -1]
        values = self.plan_values(state, B)
        hk, idk, prompt_att = h, ids, att                 # copy-head keys: the prompt's positions
        keys = self.model.copy_keys(hk, idk)
        logp = self.model.next_logp(h[:, -1:], hk, idk, prompt_att[:, None, :], keys)[:, 0]
        out_ids: list[list[int]] = [[] for _ in range(B)]
        out_lp: list[list[float]] = [[] for _ in range(B)]
        done = torch.zeros(B, dtype=torch.bool)
        next_pos = pos[:, -1] + 1
        for t in range(self.config.max_new_tokens):
            if self.sample:
                # sample from, and record the log-prob under, the tempered distribution: that is
                # the policy PPO trains (score(..., temperature=T) recomputes exactly this)
                logp_t = torch.log_softmax(logp / self.temperature, dim=-1) if self.temperature != 1.0 else logp
                tok = torch.multinomial(logp_t.exp(), 1, generator=self.generator).squeeze(1)
            else:
                logp_t = logp
                tok = logp.argmax(-1)
            lp = logp_t.gather(1, tok[:, None]).squeeze(1)
            toks, lps = tok.tolist(), lp.tolist()
            for i in range(B):
                if not done[i]:
                    out_ids[i].append(toks[i])
                    out_lp[i].append(lps[i])
            done |= tok == self.eos
            if bool(done.all()) or t == self.config.max_new_tokens - 1:
                break
            att = torch.cat([att, torch.ones(B, 1, dtype=torch.bool)], dim=1)
            h, caches = self.model(tok[:, None], next_pos[:, None], self._mask(att, 1), caches)
            next_pos = next_pos + 1
            logp = self.model.next_logp(h, hk, idk, prompt_att[:, None, :], keys)[:, 0]
        return [PlannerOutput(self.decode(o), token_ids=o, logprobs=l, value=v, prompt=p)
                for o, l, v, p in zip(out_ids, out_lp, values, prompts)]

    # ------------------------------------------------------------------ scoring (with grad)
    def score(self, prompts: list[str], outputs: list[list[int]], temperature: float = 1.0) -> ScoredBatch:
        self.model.train()
        P = [self.encode_prompt(p) for p in prompts]
        Lo = max(len(o) for o in outputs)
        seqs = [p + o for p, o in zip(P, outputs)]
        L = max(len(s) for s in seqs)
        B = len(seqs)
        # right-pad the outputs, left-pad the prompts, so every prompt ends at the same column
        Lp = max(len(p) for p in P)
        ids = torch.full((B, Lp + Lo), self.pad, dtype=torch.long)
        att = torch.zeros((B, Lp + Lo), dtype=torch.bool)
        omask = torch.zeros((B, Lo), dtype=torch.float32)
        for i, (p, o) in enumerate(zip(P, outputs)):
            ids[i, Lp - len(p):Lp] = torch.tensor(p)
            att[i, Lp - len(p):Lp] = True
            if o:
                ids[i, Lp:Lp + len(o)] = torch.tensor(o)
                att[i, Lp:Lp + len(o)] = True
                omask[i, :len(o)] = 1.0
        pos = (att.long().cumsum(1) - 1).clamp(min=0)
        T = Lp + Lo
        h, _ = self.model(ids, pos, self._mask(att, T))
        # the token at column Lp-1+j predicts output token j; it copies from the prompt only
        # (copying its own output invites loops like "open open open")
        keymask = (torch.arange(T)[None, :] < Lp)[None].expand(1, Lo, T) & att[:, None, :]
        tgt = ids[:, Lp:Lp + Lo]
        hq = h[:, Lp - 1:Lp - 1 + Lo]
        if self.entropy_in_score:
            logp_all = self.model.next_logp(hq, h, ids, keymask)
            if temperature != 1.0:
                logp_all = torch.log_softmax(logp_all / temperature, dim=-1)
            logp = logp_all.gather(2, tgt[..., None]).squeeze(2) * omask
            ent = (-(logp_all.exp() * logp_all).sum(-1) * omask if self.entropy_in_score
                   else torch.zeros_like(logp))
        else:   # the fast paths: no [N,L,V] mixture; entropy not computed (reported as 0)
            logp = (self.model.target_logp(hq, h, ids, keymask, tgt) if temperature == 1.0
                    else self.model.tempered_target_logp(hq, h, ids, keymask, tgt, temperature)) * omask
            ent = torch.zeros_like(logp)
        return ScoredBatch(logp, omask, ent, h[:, Lp - 1])

    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())
