"""Diagnosis at the hand-over state k steps before the end of multi-app train tasks (issue 26):
what the expert does there, whether that decision is expressible (its text among the
candidates), what probability the planner gives it and the decision it takes instead, the
entropy of each decision factor, and whether what the first app showed is in the input.

    PYTHONPATH=src python docs/results/exploration/diagnose.py CKPT [--k 3] [--n 48] [--show 6] [--diverge DIV.json]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict

import torch

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.guided import GuidedPlanner
from navrl.agent.plan import parse_plan
from navrl.agent.planner import ExpertPlanner, Planner
from navrl.agent.policy.pointer.features import KINDS, KIND_ID, decision_for
from navrl.judge.sets import make_judges
from navrl.planning import PlannerOutput
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.tasks.registry import get_suite

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from handover import multi_app_tasks  # noqa: E402


class Recorder(Planner):
    """Records the first context it is asked about per episode, answers with the expert (so the
    episode continues as the expert's would) — the hand-over states, exactly as the runner builds them."""

    name = "recorder"

    def __init__(self):
        self.first: dict = {}
        self.expert = ExpertPlanner()

    def plan(self, contexts):
        outs = self.expert.plan(contexts)
        for c, o in zip(contexts, outs):
            key = (c.task.id, id(c.device))
            if key not in self.first:
                self.first[key] = (c, o.text)
        return [PlannerOutput(o.text) for o in outs]


def handover_states(tasks, k: int, at: dict | None = None):
    """The states where the expert hands over: ``k`` steps before the end of its episode, or, for
    the tasks in ``at`` (task id -> step index), after that many expert steps from the beginning."""
    rec = Recorder()
    g = GuidedPlanner(rec, ExpertPlanner())
    at = at or {}
    g.reset({t.id: at[t.id] if t.id in at else max(0, t.expert_length() - k) for t in tasks})
    sj, aj, tj = make_judges(get_suite("train").default_judge("phone"))[:3]
    EpisodeRunner(g, AccessibilityGrounder(), sj, aj, tj, config=RunnerConfig()).run(tasks)
    return [v for v in rec.first.values()]


def factor_dists(pol, prompt: str, kind: int):
    """Probabilities of the kind factor and, for ``kind``, of its argument factor (node or text
    candidate), at temperature 1."""
    from navrl.agent.policy.pointer.features import context_prompt  # noqa: F401
    e = pol.state(prompt)
    cap = {}
    m = pol.model
    orig_k, orig_n, orig_c = m.kind_logits, m.node_logits, m.cand_logits

    def wk(*a, **kw):
        cap["kind"] = r = orig_k(*a, **kw)
        return r

    def wn(*a, **kw):
        cap["arg"] = r = orig_n(*a, **kw)
        return r

    def wc(*a, **kw):
        r = orig_c(*a, **kw)
        cap["arg"] = r[0]
        return r
    m.kind_logits, m.node_logits, m.cand_logits = wk, wn, wc
    try:
        with torch.no_grad():
            pol._forward([e], torch.tensor([kind]), torch.tensor([0]), torch.tensor([0]), 1.0, choose=False)
    finally:
        m.kind_logits, m.node_logits, m.cand_logits = orig_k, orig_n, orig_c
    pk = torch.softmax(cap["kind"][0], -1)
    pa = torch.softmax(cap["arg"][0], -1) if "arg" in cap else None
    return e, pk, pa


def H(p: torch.Tensor) -> float:
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--suite", default="train")
    ap.add_argument("--show", type=int, default=6)
    ap.add_argument("--json", default=None)
    ap.add_argument("--diverge", default=None, help="a diverge.py --json file: hand over where that planner first left "
                    "the expert's path (its tasks only), instead of --k before the end")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    from navrl.experiments.pipeline import load_policy
    pol = load_policy(a.ckpt)
    tasks = multi_app_tasks(a.suite, a.n)
    at = None
    if a.diverge:
        with open(a.diverge) as f:
            at = {tid: v[0] for tid, v in json.load(f).items() if v and v[0] is not None}
        tasks = [t for t in tasks if t.id in at]
    states = handover_states(tasks, a.k, at)
    rows = []
    for c, expert_text in states:
        prompt = pol.prompt_text(c)
        d = json.loads(prompt)
        step = parse_plan(expert_text).step
        e = pol.state(prompt)
        target = decision_for(step, e, pol.frames)
        greedy = pol.decide(prompt)
        k_exp = target.kind if target else KIND_ID.get(step.split()[0].lower(), 0)
        e, pk, pa = factor_dists(pol, prompt, k_exp)
        # entropy of the factors of the planner's own (greedy) decision
        _, pk_g, pa_g = factor_dists(pol, prompt, greedy.kind)
        facts = pol.vocab.facts(tuple(d.get("m", ())))
        # the text the expert types and whether it is in memory / in the goal
        typed = step.split('"')[1] if step.startswith("Type") and '"' in step else None
        r = {
            "task": c.task.id, "template": c.task.template, "expert": step, "t": d["t"],
            "expressible": target is not None,
            "planner": pol.decide(prompt),
            "planner_step": None,
            "p_kind_expert": float(pk[k_exp]),
            "p_arg_expert": float(pa[target.arg]) if (target and target.arg >= 0 and pa is not None) else None,
            "H_kind": H(pk_g), "H_arg": H(pa_g) if pa_g is not None else None,
            "n_cands": len(e.cand_text),
            "memory": d.get("m", []), "facts": list(facts),
            "typed_in_memory": bool(typed) and any(typed in m for m in d.get("m", [])),
            "typed_in_goal": bool(typed) and typed in d["g"],
            "typed_in_facts": bool(typed) and any(typed in f for f in facts),
            "ctx_pieces": int(len(e.ctx_ids)),
        }
        from navrl.agent.policy.pointer.features import render_step
        r["planner_step"] = render_step(greedy, e, pol.frames)
        if target is not None and target.arg >= 0:
            r["target_src"] = int(e.cand_src[target.arg]) if KINDS[target.kind] in ("type", "answer", "ask") else None
        if greedy.arg >= 0 and KINDS[greedy.kind] in ("type", "answer", "ask") and pa_g is not None:
            r["p_arg_planner"] = float(pa_g[greedy.arg])
            r["planner_src"] = int(e.cand_src[greedy.arg])
        if pa is not None and KINDS[k_exp] in ("type", "answer"):
            # the best candidate from each source (0 goal, 1 answers+memory, 2/3 screen, 4 fixed)
            best = {}
            for i, (src, txt) in enumerate(zip(e.cand_src.tolist(), e.cand_text)):
                if float(pa[i]) > best.get(src, (0, ""))[0]:
                    best[src] = (float(pa[i]), txt)
            r["best_by_src"] = {int(s): v for s, v in best.items()}
            r["p_src"] = {int(s): float(pa[torch.from_numpy(e.cand_src == s)].sum()) for s in set(e.cand_src.tolist())}
        del r["planner"]
        rows.append(r)
    # ---- summary
    n = len(rows)
    by_kind = Counter(r["expert"].split()[0] for r in rows)
    ok = sum(r["planner_step"] == r["expert"] for r in rows)
    where = "where the --diverge planner left the path" if at else f"{a.k} steps before the end"
    print(f"{n} hand-over states, {where}; expert steps: {dict(by_kind)}")
    print(f"planner's greedy step == expert's: {ok}/{n}")
    print(f"expert decision expressible (a candidate/node): {sum(r['expressible'] for r in rows)}/{n}")
    typ = [r for r in rows if r["expert"].startswith("Type")]
    if typ:
        print(f"Type steps: {len(typ)}; typed text in memory m: {sum(r['typed_in_memory'] for r in typ)}, "
              f"in memory facts (joined to answers): {sum(r['typed_in_facts'] for r in typ)}, "
              f"in goal: {sum(r['typed_in_goal'] for r in typ)}; expressible: {sum(r['expressible'] for r in typ)}")
        pe = [r["p_arg_expert"] for r in typ if r["p_arg_expert"] is not None]
        if pe:
            pe.sort()
            print(f"  p(expert's text | type): median {pe[len(pe) // 2]:.2e}, max {max(pe):.2e}, min {min(pe):.2e}")
        pk = sorted(r["p_kind_expert"] for r in typ)
        print(f"  p(kind = type): median {pk[len(pk) // 2]:.3f}")
        src = defaultdict(list)
        for r in typ:
            for s, v in r.get("p_src", {}).items():
                src[s].append(v)
        print("  mean p(text from source | type): " + ", ".join(
            f"{['goal', 'answers+memory', 'label', 'value', 'fixed'][s]} {sum(v) / len(typ):.3f}" for s, v in sorted(src.items())))
    hk = [r["H_kind"] for r in rows]
    ha = [r["H_arg"] for r in rows if r["H_arg"] is not None]
    print(f"entropy (nats) of the planner's own decision: kind mean {sum(hk) / n:.3f}, "
          f"arg mean {sum(ha) / max(1, len(ha)):.3f} (n={len(ha)})")
    per = defaultdict(lambda: [0, 0])
    for r in rows:
        per[r["template"]][0] += r["planner_step"] == r["expert"]
        per[r["template"]][1] += 1
    for tp, (kk, nn) in sorted(per.items()):
        ex = next(r for r in rows if r["template"] == tp)
        print(f"  {tp:24s} {kk}/{nn} match; e.g. expert {ex['expert']!r} planner {ex['planner_step']!r}")
    for r in rows[:a.show]:
        print("----", r["task"], "t", r["t"])
        print("  expert :", r["expert"], " p(kind)", f"{r['p_kind_expert']:.3f}", "p(arg)",
              f"{r['p_arg_expert']:.2e}" if r["p_arg_expert"] is not None else None, "src", r.get("target_src"))
        print("  planner:", r["planner_step"], "p(arg)", f"{r.get('p_arg_planner', float('nan')):.3f}",
              "src", r.get("planner_src"))
        print("  H kind", f"{r['H_kind']:.3f}", "H arg", r["H_arg"] and f"{r['H_arg']:.3f}", "cands", r["n_cands"],
              "ctx pieces", r["ctx_pieces"])
        print("  memory:", r["memory"][:12])
        print("  facts :", r["facts"])
        if "best_by_src" in r:
            print("  best by source:", {k: (f"{v[0]:.2e}", v[1]) for k, v in r["best_by_src"].items()})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
