"""The pointer planner: the CPU default that points at nodes and copies text spans instead
of writing entity strings token by token (docs/design.md §3a).

It speaks the planner protocol: every decision is rendered as ``Reasoning / Step /
Remaining`` text, so grounders, judges, trajectories and reports are unchanged. Its
"output token ids" are the decision's factors (kind, node or text candidate, question
frame) and the recorded log-probs are theirs, at the rollout temperature; their sum is the
output's log-prob, and :meth:`score` recomputes exactly that from the stored prompt.
"""
from __future__ import annotations

import copy
import json
from dataclasses import asdict

import numpy as np
import torch

from navrl.agent.planner import PlannerContext, PlannerOutput
from navrl.agent.policy.base import Policy, ScoredBatch
from navrl.agent.policy.pointer.augment import augment_prompt
from navrl.agent.policy.pointer.features import (DRAG, FEATURE_LAYOUT, K, K_FIRST, KIND_ID, NODE_KINDS, Decision,
                                                 Encoded, LayoutMismatch,
                                                 Vocab,
                                                 context_parts, context_prompt, decision_for, encode,
                                                 encode_parts, question_frame, render_text)
from navrl.agent.policy.pointer.model import NEG, PointerConfig, PointerNet, Shared, node_rows_of, pack
from navrl.lru import BoundedCache

_USE = {KIND_ID["type"]: 0, KIND_ID["answer"]: 1, KIND_ID["ask"]: 2}
_NODE_K = frozenset(KIND_ID[k] for k in NODE_KINDS)
_IS_NODE = np.array([k in _NODE_K for k in range(len(KIND_ID))])
_IS_TEXT = np.array([k in _USE for k in range(len(KIND_ID))])
_USE_OF = torch.tensor([_USE.get(k, 0) for k in range(len(KIND_ID))])


def _per_cand(states: list[Encoded], rows: np.ndarray, C: int, of, fill, dtype) -> torch.Tensor:
    """[B, C]: ``of(state)`` (one value per text candidate) for states ``rows``, ``fill`` elsewhere."""
    m = np.full((len(states), C), fill, dtype)
    for i in rows.tolist():
        v = of(states[i])
        m[i, :len(v)] = v
    return torch.from_numpy(m)


def _coarse_cands(states: list[Encoded], rows: np.ndarray, C: int) -> torch.Tensor:
    """[B, C] bool: the text candidates of states ``rows`` that are a whole text (a whole fact,
    answer or label) or a quoted span of the goal — the coarse choices argument exploration
    spreads its share over (a fact is typed whole far more often than any of its sub-spans)."""
    return _per_cand(states, rows, C, lambda e: (e.cand_feats[:, 5] > 0.5) | (e.cand_feats[:, 6] > 0.5), False, bool)


def _cand_sources(states: list[Encoded], rows: np.ndarray, C: int) -> torch.Tensor:
    """[B, C] long: the source of each text candidate of states ``rows`` (0 goal, 1 answers and
    memory, 2 screen labels, 3 screen values, 4 fixed answers), -1 where there is none."""
    return _per_cand(states, rows, C, lambda e: e.cand_src, -1, np.int64)


def _by_source(lp: torch.Tensor, legal: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """[B, C] probabilities: each source present among a row's legal choices gets an equal share,
    spread over that source's choices by the policy's own log-probs ``lp`` renormalised within it
    (argument exploration by source: what a source holds is tried in proportion to how much the
    policy likes it *within* the source, however little mass the source as a whole has)."""
    out = torch.zeros_like(lp)
    n = torch.zeros(lp.shape[0], 1)
    for s in range(int(src.max()) + 1 if src.numel() else 0):
        inside = legal & (src == s)
        lse = torch.logsumexp(lp.masked_fill(~inside, float("-inf")), -1, keepdim=True)
        present = inside.any(-1, keepdim=True)
        out = out + torch.where(inside & present, (lp - torch.where(present, lse, 0.0)).exp(), 0.0)
        n = n + present.float()
    return out / n.clamp(min=1)


def _size(e: Encoded) -> tuple[int, int]:
    """Sort key: the encoder's sequence length, then the number of text candidates."""
    return len(e.ctx_ids) + len(e.hist_kind) + len(e.node_role), len(e.cand_text)


class PointerPlanner(Policy):
    """Factorised pointer policy over the UI tree (≤ 1 M parameters at the defaults)."""

    name = "pointer"

    def __init__(self, vocabulary: list[str], config: PointerConfig | None = None, frames: list[str] | None = None,
                 seed: int = 0):
        self.config = config or PointerConfig()
        self.vocab = Vocab(vocabulary)
        self.vocab.type_on_screen = self.config.type_on_screen
        self.frames: list[str] = list(frames or [])
        self.seed = seed
        self.model = PointerNet(self.config, self.vocab.size, seed=seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.sample = True
        self.temperature = 1.0
        self.critic = None
        self._cache: BoundedCache[str, Encoded] = BoundedCache(50_000, touch=True, weigh=Encoded.weight,
                                                               max_weight=STATE_CACHE_BYTES)
        self._demo_ids: BoundedCache[tuple[str, str, int], list[int] | None] = BoundedCache(100_000, evict="all")
        self.chunk_size = 64
        """States per forward pass (batches are cut into chunks of similar-sized states)."""

    def reference_copy(self) -> "PointerPlanner":
        """A frozen copy (KL reference, exploration prior) with its own weights, sharing this
        planner's vocabulary memos and cache of encoded states: an encoding reads no weight, and
        a second cache doubled a long run's memory (docs/results/exploration.md §20)."""
        shared = (self.vocab, self._cache, self._demo_ids)
        return copy.deepcopy(self, {id(o): o for o in shared})

    # ------------------------------------------------------------------ Policy
    @property
    def state_dim(self) -> int:
        return self.config.d_model

    def policy_parameters(self) -> list[torch.nn.Parameter]:
        return list(self.model.parameters())

    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def prompt_text(self, ctx: PlannerContext) -> str:
        return context_prompt(ctx)

    def encode_target(self, text: str) -> list[int]:
        raise NotImplementedError("the pointer planner's targets depend on the state: use encode_demo(prompt, text)")

    def encode_demo(self, prompt: str, text: str) -> list[int] | None:
        key = (prompt, text, len(self.frames))   # PPO-ptx re-reads the same demonstrations every minibatch
        if key in self._demo_ids:
            return self._demo_ids.get(key)
        from navrl.agent.plan import parse_plan
        plan = parse_plan(text)
        d = decision_for(plan.step, self.state(prompt), self.frames) if plan else None
        return self._demo_ids.put(key, d.ids() if d is not None else None)

    def relabel_prompt(self, prompt: str, goal: str) -> str | None:
        """The JSON state with its goal (``"g"``) replaced; key order and spacing as
        :func:`~navrl.agent.policy.pointer.features.context_prompt` writes them."""
        d = json.loads(prompt)
        if not isinstance(d, dict) or "g" not in d:
            return None
        d["g"] = goal
        return json.dumps(d, separators=(",", ":"))

    def prepare_sft(self, demos) -> None:
        """Learn the question frames ("What is your {}?") from the demonstrations' questions."""
        from navrl.agent.plan import parse_plan
        from navrl.agent.steps import parse_step
        for dm in demos:
            plan = parse_plan(dm.target)
            c = parse_step(plan.step) if plan else None
            if c is None or c.kind != "ask_user" or not c.text:
                continue
            split = question_frame(c.text, json.loads(dm.prompt)["g"])
            if split and split[0] not in self.frames and len(self.frames) < self.config.max_frames:
                self.frames.append(split[0])

    def augment_prompt(self, prompt: str, rng) -> str:
        """Distractor nodes and other geometry (:mod:`navrl.agent.policy.pointer.augment`)."""
        return augment_prompt(prompt, self.vocab.words, rng)

    def state_dict_all(self) -> dict:
        return {"model": self.model.state_dict(), "config": asdict(self.config), "vocabulary": self.vocab.words,
                "frames": list(self.frames), "seed": self.seed, "generator": self.generator.get_state(),
                "layout": dict(FEATURE_LAYOUT)}

    def load_state_dict_all(self, state: dict) -> None:
        self.frames = list(state.get("frames", self.frames))
        model = state["model"]
        if self.model.field_q is not None and "field_q.weight" not in model:
            # saved before the text query read the focused field: that layer at its zero start
            model = {**model, "field_q.weight": torch.zeros_like(self.model.field_q.weight)}
        if not any(k.startswith("drag_") for k in model):
            # saved before the drag kind: its destination layers as this seed initialises them
            # (the kind itself is new, with zero rows: :func:`widen_node_inputs`)
            model = {**model, **{k: v for k, v in self.model.state_dict().items() if k.startswith("drag_")}}
        self.model.load_state_dict(model)
        if "generator" in state:
            self.generator.set_state(state["generator"])

    @staticmethod
    def from_state(state: dict) -> "PointerPlanner":
        """The planner ``state`` (from :meth:`state_dict_all`) describes. :class:`LayoutMismatch`
        when it was saved with another input layout (a state without one is checked by the
        weights' shapes on loading)."""
        from navrl.agent.policy.pointer.vocab import PUNCTUATION
        state = widen_node_inputs(state)
        saved = state.get("layout")
        if saved is not None and saved != FEATURE_LAYOUT:
            diff = sorted(k for k in set(saved) | set(FEATURE_LAYOUT) if saved.get(k) != FEATURE_LAYOUT.get(k))
            raise LayoutMismatch("input layout " + ", ".join(f"{k} {saved.get(k)} (this navrl: {FEATURE_LAYOUT.get(k)})"
                                                            for k in diff))
        words = [w for w in state["vocabulary"] if w not in PUNCTUATION]
        p = PointerPlanner(words, PointerConfig(**state["config"]), state.get("frames"), state.get("seed", 0))
        p.load_state_dict_all(state)
        return p

    # ------------------------------------------------------------------ states
    def state(self, prompt: str) -> Encoded:
        e = self._cache.get(prompt)
        if e is None:
            e = self._cache.put(prompt, encode(prompt, self.vocab))
        return e

    def _forward(self, states: list[Encoded], kinds: torch.Tensor | None, args: torch.Tensor | None,
                 frames: torch.Tensor | None, temperature: float, choose: bool):
        """Shared by plan and score. Chooses (sample or argmax) whatever factor is not given.

        Runs the batch in chunks of states of similar size (each chunk is padded only to its
        own largest state: 2-3x less work than padding a whole PPO minibatch to its largest).
        Returns kind [B], arg [B], frame [B], logp [B,3], ent [B,3] (scoring only: zeros when
        ``choose``), mask [B,3], state [B,D], own [B,3]: ``logp`` of the behaviour policy that
        chose (the planner mixed with exploration's choices when sampling with exploration on),
        ``own`` the planner's own log-probs of the same choices (``logp`` where nothing mixed)."""
        B = len(states)
        if B <= self.chunk_size:
            return self._forward_chunk(states, kinds, args, frames, temperature, choose)
        order = sorted(range(B), key=lambda i: _size(states[i]))
        parts = []
        for k in range(0, B, self.chunk_size):
            idx = order[k:k + self.chunk_size]
            ix = torch.tensor(idx)
            parts.append(self._forward_chunk([states[i] for i in idx], *(None if t is None else t[ix]
                                                                          for t in (kinds, args, frames)),
                                             temperature, choose))
        inverse = torch.empty(B, dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(B)
        return tuple(torch.cat(ts)[inverse] for ts in zip(*parts))

    def _encode(self, states: list[Encoded]):
        """(the chunk as the heads read it, its encoding): the encoder over each distinct state
        once (states are cached per prompt: a repeated prompt is the same object) and the
        samples gathering their state's rows (:class:`Shared`) when some state repeats."""
        first: dict[int, int] = {}
        of = np.fromiter((first.setdefault(id(e), len(first)) for e in states), np.int64, len(states))
        if len(first) == len(states):
            pk = pack(states)
            return pk, self.model.encode(pk)
        uniq = [states[i] for i in np.unique(of, return_index=True)[1].tolist()]
        pk = pack(uniq)
        sh = Shared(pk, self.model.encode(pk), of)
        return sh, sh

    def _forward_chunk(self, states: list[Encoded], kinds: torch.Tensor | None, args: torch.Tensor | None,
                       frames: torch.Tensor | None, temperature: float, choose: bool):
        pk, enc = self._encode(states)
        cls = enc.cls
        B = cls.shape[0]
        T = temperature
        zero = cls.new_zeros(B)
        logp, ent, mask = [zero] * 3, [zero] * 3, [zero] * 3   # per factor: kind, node or text, frame
        own = [zero] * 3      # the planner's own log-prob of each chosen factor (before any mixing)

        prior = self.prior.model if (choose and self.sample and self.explore_prior > 0
                                     and self.prior is not None) else None
        if prior is not None:   # the frozen prior planner's view of the same states (explore_prior)
            penc = pk.encoded_by(prior) if isinstance(pk, Shared) else prior.encode(pk)
            pcls = penc.cls

        def factor(logits: torch.Tensor, given: torch.Tensor | None, col: int, rows: torch.Tensor | None,
                   coarse: torch.Tensor | None = None, sources: torch.Tensor | None = None,
                   prior_logits: torch.Tensor | None = None):
            """Choose (or take ``given``) one factor of the states ``rows`` (all if None)."""
            lp = own_lp = torch.log_softmax(logits if T == 1.0 else logits / T, dim=-1)
            eps = self.explore if col == 0 else self.explore_arg if col == 1 else 0.0
            r = self.explore_prior if prior_logits is not None else 0.0
            if choose and self.sample and (eps > 0 or r > 0):
                # behaviour policy of training rollouts: (1 - eps - r) pi + eps uniform(legal
                # choices) + r prior; the argument's uniform part is over its coarse legal choices
                # (``coarse``) where a state has any: the whole texts rather than every sub-span of
                # them; or, with ``sources``, an equal share per text source spread by the policy
                # within it
                legal = (logits > NEG / 2)
                mix = (1 - eps - r) * lp.exp()
                if eps > 0:
                    if sources is not None:
                        part = _by_source(lp, legal, sources)
                    else:
                        pool = legal if coarse is None else legal & coarse
                        pool = torch.where(pool.any(-1, keepdim=True), pool, legal).float()
                        part = pool / pool.sum(-1, keepdim=True).clamp(min=1)
                    mix = mix + eps * part
                if r > 0:
                    mix = mix + r * torch.softmax(prior_logits if T == 1.0 else prior_logits / T, -1) * legal
                mixed = torch.log(mix.clamp(min=1e-30)).masked_fill(~legal, NEG)
                lp = torch.where(legal.any(-1, keepdim=True), mixed, lp)   # rows this factor is not for: as they were
            if given is None:
                if self.sample and choose:
                    pick = torch.multinomial(lp.exp(), 1, generator=self.generator).squeeze(1)
                else:
                    pick = lp.argmax(-1)
                chosen = lp.gather(1, pick[:, None]).squeeze(1)
            else:
                pick = given
                chosen = lp.gather(1, pick.clamp(min=0)[:, None]).squeeze(1)
            mine = chosen if own_lp is lp else own_lp.gather(1, pick.clamp(min=0)[:, None]).squeeze(1)
            h = None if choose else -(lp.exp() * lp).sum(-1)   # entropy: scoring reads it, plan does not
            if rows is None:
                logp[col], mask[col], own[col] = chosen, torch.ones_like(zero), mine
                if h is not None:
                    ent[col] = h
            else:
                logp[col] = torch.where(rows, chosen, logp[col])
                own[col] = torch.where(rows, mine, own[col])
                mask[col] = torch.where(rows, 1.0, mask[col])
                if h is not None:
                    ent[col] = torch.where(rows, h, ent[col])
            return pick

        if not self.frames:   # no question frame learnt yet: asking is not a legal decision
            pk.kind_mask[:, KIND_ID["ask"]] = False
        kl = self.model.kind_logits(cls, pk.kind_mask)
        pkl = None if prior is None else prior.kind_logits(pcls, pk.kind_mask)
        if not pk.kind_mask[:, K_FIRST:].any():
            # no state of the chunk can take a kind appended since (a drag): the first kinds alone,
            # so that sampling draws from the generator what it drew before they were added
            kl, pkl = kl[:, :K_FIRST], None if pkl is None else pkl[:, :K_FIRST]
        kind = factor(kl, kinds, 0, None, prior_logits=pkl)
        kind_np = kind.numpy()
        node_np, text_np = _IS_NODE[kind_np], _IS_TEXT[kind_np]
        is_node, is_text = torch.from_numpy(node_np), torch.from_numpy(text_np)
        need = np.flatnonzero(node_np | text_np)     # states whose kind points at a node or a text span
        arg = torch.full((B,), -1, dtype=torch.long)
        frame = torch.full((B,), -1, dtype=torch.long)
        if len(need):
            nodes, ctx = enc.rows(need, text_np[need])
            if prior is not None:
                pnodes, pctx = penc.rows(need, text_np[need])
        if node_np.any():
            ns = np.flatnonzero(node_np)
            at = node_rows_of(pk, need, ns)
            pl = None if prior is None else prior.node_logits(
                pcls, pnodes if at is None else pnodes.index_select(0, at), pk, ns, kind)
            a = factor(self.model.node_logits(cls, nodes if at is None else nodes.index_select(0, at), pk, ns, kind),
                       None if args is None else torch.where(is_node, args, 0).clamp(min=0), 1, is_node,
                       prior_logits=pl)
            arg = torch.where(is_node, a, arg)
            drag_np = kind_np == DRAG
            if drag_np.any():   # a drag's destination (the third factor): a node or a direction
                is_drag = torch.from_numpy(drag_np)
                ds = np.flatnonzero(drag_np)
                at = node_rows_of(pk, need, ds)
                f = factor(self.model.drag_logits(cls, nodes if at is None else nodes.index_select(0, at), pk, ds,
                                                  arg.clamp(min=0)),
                           None if frames is None else torch.where(is_drag, frames, 0).clamp(min=0), 2, is_drag)
                frame = torch.where(is_drag, f, frame)
        if text_np.any():
            ts = np.flatnonzero(text_np)
            cl, ref = self.model.cand_logits(cls, ctx, nodes, pk, need, ts, kind, _USE_OF[kind])
            coarse = sources = None
            if choose and self.sample and self.explore_arg > 0:
                if self.explore_arg_by_source:
                    sources = _cand_sources(states, ts, cl.shape[1])
                else:
                    coarse = _coarse_cands(states, ts, cl.shape[1])
            pl = None if prior is None else prior.cand_logits(pcls, pctx, pnodes, pk, need, ts, kind, _USE_OF[kind])[0]
            a = factor(cl, None if args is None else torch.where(is_text, args, 0).clamp(min=0), 1, is_text, coarse,
                       sources, pl)
            arg = torch.where(is_text, a, arg)
        ask_np = kind_np == KIND_ID["ask"]
        if self.frames and ask_np.any():
            is_ask = torch.from_numpy(ask_np)
            f = factor(self.model.frame_logits(cls, ref, pk, ts, np.flatnonzero(ask_np), arg.clamp(min=0),
                                               len(self.frames)),
                       None if frames is None else torch.where(is_ask, frames, 0).clamp(min=0), 2, is_ask)
            frame = torch.where(is_ask, f, frame)
        return (kind, arg, frame, torch.stack(logp, 1), torch.stack(ent, 1), torch.stack(mask, 1), cls,
                torch.stack(own, 1))

    # ------------------------------------------------------------------ generation
    @torch.inference_mode()
    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        if not contexts:
            return []
        if self.model.training:   # (eval() walks every module: a tenth of a one-state call)
            self.model.eval()
        prompts, states = [], []
        for c in contexts:   # encoded from the prompt's parts (the same state as from the prompt)
            p, parts = context_parts(c)
            e = self._cache.get(p)
            if e is None:
                e = self._cache.put(p, encode_parts(parts, self.vocab))
            prompts.append(p)
            states.append(e)
        T = self.temperature if self.sample else 1.0
        kind, arg, frame, logp, _, mask, cls, own = self._forward(states, None, None, None, T, choose=True)
        values = self.plan_values(cls, len(states))
        # the planner's own log-probs, recorded for the outputs exploration mixed (where they differ)
        mixed = (own != logp).any(1).tolist()
        owns = [o if m else None for o, m in zip(own.tolist(), mixed)]
        out = []
        for i, (e, k, a, f, lp, mine) in enumerate(zip(states, kind.tolist(), arg.tolist(), frame.tolist(),
                                                       logp.tolist(), owns)):
            d = Decision(k, a, f)
            ids = d.ids()
            out.append(PlannerOutput(render_text(d, e, self.frames), token_ids=ids, logprobs=lp[:len(ids)],
                                     value=values[i], prompt=prompts[i],
                                     policy_logprobs=None if mine is None else mine[:len(ids)]))
        return out

    def decide(self, prompt: str) -> Decision:
        """The greedy decision on one stored prompt (tests, analysis)."""
        with torch.no_grad():
            sample, self.sample = self.sample, False
            try:
                kind, arg, frame, *_ = self._forward([self.state(prompt)], None, None, None, 1.0, choose=True)
            finally:
                self.sample = sample
        return Decision(int(kind[0]), int(arg[0]), int(frame[0]))

    # ------------------------------------------------------------------ scoring (with grad)
    def decision_factors(self, outputs: list[list[int]], width: int) -> list[tuple[str, ...]]:
        """``(kind, node | text, frame | target)``: the second position is the node a node-kind
        points at, or the text span a type/answer/ask copies (its entropy tells which collapsed);
        the third an ask's question frame or a drag's destination."""
        out = []
        for o in outputs:
            k = Decision.from_ids(o).kind
            second = "node" if _IS_NODE[k] else "text" if _IS_TEXT[k] else "none"
            third = "target" if k == DRAG else "frame"
            out.append(("kind", second, third, *(("pad",) * max(0, width - 3)))[:width])
        return out

    def score(self, prompts: list[str], outputs: list[list[int]], temperature: float = 1.0) -> ScoredBatch:
        self.model.train()
        states = [self.state(p) for p in prompts]
        ds = [Decision.from_ids(o) for o in outputs]
        kinds = torch.tensor([d.kind for d in ds])
        args = torch.tensor([d.arg for d in ds])
        frames = torch.tensor([d.frame for d in ds])
        _, _, _, logp, ent, mask, cls, _ = self._forward(states, kinds, args, frames, temperature, choose=False)
        return ScoredBatch(logp * mask, mask, ent * mask, cls)


STATE_CACHE_BYTES = 1 << 30
"""The pointer planner's cache of encoded states holds at most about this many bytes (the
states' arrays; :meth:`Encoded.weight`), besides its 50,000 entries: a state rolled out is scored
again in the update, a demonstration in every PPO-ptx minibatch. Unbounded by bytes, 50,000
states of the phone world took ~3 GB per planner (docs/results/exploration.md §20)."""


NODE_COLUMNS_ADDED = {27: 46, 28: 46, 29: 46, 30: 46, 31: 46, 35: 46, 36: 46, 37: 46, 38: 46, 39: 46, 41: 46, 44: 46}
"""Node-input widths of earlier layouts -> the width after the columns appended since (27 -> 28:
the used-app column; 28 -> 29: the ordinal column; 29 -> 30: the widget-type column; 30 -> 31:
the remembered row the goal picks out; 31 -> 35: the goal date's day and month, the pager control
toward its month, a heading of another month; 35 -> 36: the label ends with a quoted text of
the goal; 36 -> 37: the node is in the section of a text the goal names; 37 -> 38: "Odd" / "Even"
as the number in its row is; 38 -> 39: the extreme of a quantity the goal asks for; 39 -> 41: a
scrolling node hides content below / above, toward the end the goal names; 41 -> 44: the grid
point the goal's "(x,y)" names, a drawn thing that fits the goal's description, the button of how
many fit; 44 -> 46: a button naming what a drawn thing is, a number meeting the goal's condition).
A planner saved with
such a width loads with zero weights for the new columns, so it computes exactly what it computed
before."""


CAND_COLUMNS_ADDED = {16: 20, 17: 20, 18: 20, 19: 20}
"""Candidate-input widths of earlier layouts -> the width after the columns appended since (16 ->
17: the case twin's flag; 17 -> 18: the computed value's flag; 18 -> 19: the goal span beside a
word naming the focused field; 19 -> 20: a table row's value whose key the focused field or the
goal names), for the first layer of ``cand_w`` (whose inputs end with them)."""

_WIDENED = (("node", "node_in.weight", NODE_COLUMNS_ADDED, 0),
            ("cand", "cand_w.0.weight", CAND_COLUMNS_ADDED, len(KIND_ID)))
"""(layout key, weight, widths added, the weight's other inputs: the kind's one-hot for ``cand_w``)."""


_KIND_ROWS = ("kind_head.2.weight", "kind_head.2.bias", "node_head.2.weight", "node_head.2.bias", "kind_emb.weight",
              "hist_kind.weight")
"""The weights with a row per kind (:data:`K`), widened by zero rows for kinds appended since."""


def widen_node_inputs(state: dict) -> dict:
    """``state`` (:meth:`PointerPlanner.state_dict_all`) with its node-input and candidate-input
    weights widened by zero columns at the end when it was saved before columns were appended
    (:data:`NODE_COLUMNS_ADDED`, :data:`CAND_COLUMNS_ADDED`), and its kind-sized weights by zero
    rows (and ``cand_w``'s kind one-hot by zero columns) when it was saved with the first
    :data:`K_FIRST` kinds, and differs from this layout in nothing else; otherwise ``state``
    itself."""
    saved = state.get("layout")
    if not saved or saved == FEATURE_LAYOUT:
        return state
    model, layout = dict(state["model"]), dict(saved)
    if saved.get("kinds") == K_FIRST and K > K_FIRST:   # saved before the drag kind: zero rows for it
        from navrl.agent.policy.pointer.model import CAND_FEATS_FIRST
        add = K - K_FIRST
        for name in _KIND_ROWS:
            w = model.get(name)
            if w is None or w.shape[0] != K_FIRST:
                return state
            model[name] = torch.cat([w, w.new_zeros(add, *w.shape[1:])])
        w = model.get("cand_w.0.weight")
        if w is None:
            return state
        at = CAND_FEATS_FIRST + K_FIRST    # the kind's one-hot columns end there
        model["cand_w.0.weight"] = torch.cat([w[:, :at], w.new_zeros(w.shape[0], add), w[:, at:]], 1)
        layout["kinds"] = K
    for key, name, added, others in _WIDENED:
        old, now = saved.get(key), FEATURE_LAYOUT[key]
        if old == now:
            continue
        w = model.get(name)
        if added.get(old) != now or w is None or w.shape[1] != old + others:
            return state
        model[name] = torch.cat([w, w.new_zeros(w.shape[0], now - old)], dim=1)
        layout[key] = now
    if layout != FEATURE_LAYOUT:
        return state
    return {**state, "model": model, "layout": layout}
