"""``question_frame`` is memoised, each goal's span patterns compiled once: the same frames as
the plain search (a regex built per span on every call) on questions about train and test goals."""
from __future__ import annotations

import random
import re

from navrl.agent.policy.pointer import features as F
from navrl.agent.policy.pointer.text import content_keys, pieces, span_text, spans
from navrl.worlds.phone.suites import suite_tasks


def _plain(question: str, goal: str):
    gp = pieces(goal)
    ql = question.lower()
    best = None
    for a, b in spans(gp, F.MAX_SPAN_CTX):
        txt = span_text(goal, gp, a, b)
        if len(content_keys(pieces(txt))) == 0:
            continue
        m = re.search(r"(?<![a-z0-9])" + re.escape(txt.lower()) + r"(?![a-z0-9])", ql)
        if m and (best is None or len(txt) > len(best[1])):
            best = (question[:m.start()] + "{}" + question[m.end():], txt)
    return best


def test_question_frame_equals_the_plain_search() -> None:
    rng = random.Random(0)
    pairs = []
    for suite in ("train", "test-unseen"):
        for t in suite_tasks(suite, 40):
            ws = t.goal.split()
            for _ in range(3):
                a = rng.randrange(len(ws))
                frag = " ".join(ws[a:rng.randrange(a, min(len(ws), a + 5)) + 1])
                frag = frag.upper() if rng.random() < 0.3 else frag
                q = rng.choice(["Which {}?", "What is the {} you mean?", "{}", "Do you want x{}?"]).format(frag)
                pairs.append((q, t.goal))
            pairs.append(("Which one?", t.goal))
    want = [_plain(q, g) for q, g in pairs]
    F.question_frame.cache_clear()
    assert [F.question_frame(q, g) for q, g in pairs] == want
    assert [F.question_frame(q, g) for q, g in pairs] == want      # from the memo
    assert sum(w is not None for w in want) > len(pairs) // 2
