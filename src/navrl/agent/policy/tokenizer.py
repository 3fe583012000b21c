"""A byte-level BPE tokenizer trained on the phone world's own text (``tokenizers``).

Byte-level, so any string — a label never seen in training, typed text with symbols —
encodes and decodes losslessly.
"""
from __future__ import annotations

from typing import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

PAD, BOS, SEP, EOS = "<pad>", "<bos>", "<sep>", "<eos>"
SPECIALS = [PAD, BOS, SEP, EOS]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 4096) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def phone_world_corpus(n_tasks: int = 300, seed: int = 0) -> list[str]:
    """Prompts and expert outputs from every suite (labels of both skins and all apps)."""
    from navrl.agent.planner import ExpertPlanner, PlannerContext
    from navrl.agent.prompt import PromptConfig, build_prompt
    from navrl.tasks.expert import Memory, expert_step, intent_action
    from navrl.tasks.suites import SUITES, suite_tasks
    from navrl.tasks.user import ProfileUser
    texts: list[str] = []
    user = ProfileUser()
    per = max(1, n_tasks // len(SUITES))
    for suite in SUITES:
        for task in suite_tasks(suite, per, seed=seed):
            w, mem, hist = task.make_device(), Memory(), []
            for _ in range(task.max_steps):
                obs = w.observe()
                texts.append(build_prompt(PlannerContext(task, obs, list(hist), "", list(mem.qa)),
                                          PromptConfig(max_history=3, include_reasoning=False, compact=True)))
                s = expert_step(task, w, mem)
                texts.append(s.text())
                hist.append((s.reasoning, s.step))
                if s.intent[0] == "complete":
                    break
                if s.intent[0] == "ask":
                    mem.qa.append((s.intent[1], user.answer(task, s.intent[1])))
                    continue
                w.act(intent_action(obs, s.intent))
    return texts
