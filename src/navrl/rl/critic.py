"""The critics: a value MLP on the planner's last-prompt-token state (PPO), and the GiGPPO
critic that also reads the nearest sibling state (see :mod:`navrl.rl.gigppo`).

Both read the state *detached*: the critic learns at 100x the policy's rate and is
thrown away after training; its gradients must not reach the planner.
"""
from __future__ import annotations

import torch
from torch import nn

from navrl.rl.gigppo import GiGPPOCritic, nearest_sibling_grid


class ValueCritic(nn.Module):
    """V(s) from the state embedding [N, D] -> [N]."""

    def __init__(self, embed_dim: int, hidden_dim: int = 256):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(embed_dim), nn.Linear(embed_dim, hidden_dim), nn.GELU(),
                                 nn.Linear(hidden_dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, 1))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state.detach()).squeeze(-1)


class CriticAdapter:
    """One interface over both critics for the trainer: ``values(grid inputs) -> V [B,T]``."""

    def __init__(self, kind: str, embed_dim: int, hidden_dim: int = 256):
        self.kind = kind
        self.net: nn.Module = GiGPPOCritic(embed_dim, hidden_dim) if kind == "gigppo" else ValueCritic(embed_dim, hidden_dim)

    def parameters(self):
        return self.net.parameters()

    def grid_values(self, emb: torch.Tensor, returns: torch.Tensor, batch) -> torch.Tensor:
        """emb [B,T,D] (detached states), returns [B,T] (the neighbours' G for GiGPPO) -> V [B,T]."""
        if self.kind == "gigppo":
            return self.net.forward_grid(emb.detach(), returns, batch.phash, batch.group_ids, batch.step_mask,
                                         batch.valid)
        B, T, D = emb.shape
        return self.net(emb.reshape(B * T, D)).view(B, T)

    def plan_value(self, state: torch.Tensor):
        """Values at rollout time (logged only); GiGPPO needs siblings, so none there."""
        if self.kind == "gigppo":
            return None
        with torch.no_grad():
            return self.net(state)
