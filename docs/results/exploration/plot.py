"""Curves of the reduced-pool runs: rollout success per update (all rollouts start 3 steps before
the end) and per template. Reads docs/results/exploration/data/*.json (reduce.py's reduce.json).

    python docs/results/exploration/plot.py
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent


def main() -> None:
    runs = {p.stem: json.loads(p.read_text()) for p in sorted((HERE / "data").glob("*.json"))
            if not p.stem.startswith(("handover", "diagnose"))}
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    colors = plt.cm.tab20.colors
    for i, (name, r) in enumerate(runs.items()):
        h = r.get("history")
        if not h or "rows" not in r:
            continue
        xs = [x["update"] for x in h]
        ys = [x.get("dynamic/success_all", x.get("success")) for x in h]
        k = 3
        sm = [sum(ys[max(0, i - k + 1):i + 1]) / len(ys[max(0, i - k + 1):i + 1]) for i in range(len(ys))]
        style = dict(color=colors[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20], ls="-" if i % 2 == 0 else "--")
        ax[0].plot(xs, sm, **style, label=f"{name} (eval last 3: {r['rows']['train/3']['after']}/48)")
        ent = [x.get("policy/entropy") for x in h]
        ax[1].plot(xs, ent, **style, label=name)
    ax[0].set(xlabel="update", ylabel="rollout success, sampled (3-update mean)", title="RL from 3 steps before the end")
    ax[1].set(xlabel="update", ylabel="mean entropy of the trained factors (nats)", title="policy entropy")
    ax[0].legend(fontsize=7)
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(HERE / "curves.png", dpi=110)
    print(HERE / "curves.png")


if __name__ == "__main__":
    main()
