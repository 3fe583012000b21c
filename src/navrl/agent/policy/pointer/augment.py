"""Screen augmentation for the pointer planner's demonstrations: domain randomisation of the
platform chrome (Tobin et al., 2017; Laskin et al., RAD 2020, for RL observations).

A planner trained on one platform's screens learns incidental facts about them: how many
nodes a screen has, where the first content node sits, which controls are never there. On
another platform the same app carries extra controls (system bars, overflow menus) and a
different geometry, and such a planner changes its mind about the one thing to do — after
SFT on iOS screens, it stopped asking the user on Android's first screen entirely (0 of 33
validation ask-user tasks against 28 of 33 on iOS) because three system-bar buttons
appeared. Augmented demonstrations keep the expert's decision and change what should not
matter:

- a few *distractor* nodes (buttons or icons labelled with UI words or fresh entity-like
  words, at random places in the list and on screen) that the expert never uses;
- the screen geometry (an affine map of the normalised bounds: other bar heights, sizes).

Nothing here reads another platform's screens: the distractors' words come from the
planner's own UI vocabulary, and the geometry is random. The decision target is recomputed
on the augmented state from the Step text, so a distractor never shares a label with a node
already on screen (the target would become ambiguous).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass

from navrl.agent.policy.pointer.text import STOPWORDS


@dataclass(frozen=True)
class AugmentConfig:
    distractors: int = 3
    """At most this many distractor nodes per screen (uniform 0..distractors)."""
    geometry: float = 0.08
    """Largest shift (as a share of the screen) and shrink of the normalised bounds."""
    entity_share: float = 0.3
    """Share of distractors labelled with a fresh entity-like word rather than UI words."""


_ROLES = ("button", "icon", "button", "icon", "tab", "text")
_ACTS = {"button": "t", "icon": "t", "tab": "t", "text": ""}
_LETTERS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"


def _fresh_word(rng: random.Random) -> str:
    return "".join(rng.choice(_LETTERS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 3))).capitalize()


def augment_prompt(prompt: str, words: list[str], rng: random.Random, cfg: AugmentConfig = AugmentConfig()) -> str:
    """``prompt`` (a pointer-planner JSON state) with distractor nodes and other geometry.

    ``words``: the UI words distractor labels are made of (the planner's vocabulary)."""
    d = json.loads(prompt)
    nodes = d["n"]
    taken = {str(n[1]).lower() for n in nodes}
    ui = [w for w in words if w.isalpha() and w not in STOPWORDS and len(w) > 2]
    # geometry: y' = a*y + b, x' = c*x + e (content may sit lower, be squeezed, or be narrower)
    g = cfg.geometry
    a = 1.0 - rng.uniform(0, g)
    b = rng.uniform(0, 1.0 - a)
    c = 1.0 - rng.uniform(0, g / 2)
    e = rng.uniform(0, 1.0 - c)
    for n in nodes:
        x0, y0, x1, y1 = n[6]
        n[6] = [round(c * x0 + e, 3), round(a * y0 + b, 3), round(c * x1 + e, 3), round(a * y1 + b, 3)]
    for _ in range(rng.randint(0, cfg.distractors) if ui else 0):
        for _try in range(5):
            if rng.random() < cfg.entity_share:
                label = _fresh_word(rng)
            else:
                label = " ".join(rng.choice(ui) for _ in range(rng.choice((1, 1, 2)))).capitalize()
            if label.lower() not in taken:
                break
        else:
            continue
        taken.add(label.lower())
        role = rng.choice(_ROLES)
        x0, y0 = rng.uniform(0, 0.8), rng.uniform(0, 0.92)
        box = [round(x0, 3), round(y0, 3), round(min(1.0, x0 + rng.uniform(0.1, 0.35)), 3),
               round(min(1.0, y0 + rng.uniform(0.04, 0.08)), 3)]
        nodes.insert(rng.randint(0, len(nodes)), [role, label, "", 1, 0, _ACTS[role], box])
    return json.dumps(d, separators=(",", ":"))
