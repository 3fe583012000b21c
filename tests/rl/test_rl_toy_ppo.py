"""End-to-end toy: PPO with a critic (value head + ppo loss + critic loss) on a contextual bandit.

Two "tasks" (context tokens 0 and 1); the planner writes one action token out of 2..5; the
rewarded token differs per task. Each output is one step: dense +1 for the right token (step
success) and terminal +2 (task done). Some trajectories are infrastructure failures
(valid = False) carrying absurd rewards: they must not steer anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from navrl.rl.advantages import AdvantageInputs, compute_advantages
from navrl.rl.config import TrainConfig
from navrl.rl.losses import critic_loss, ppo_policy_loss
from navrl.rl.value_head import ValueHead, last_prompt_token_hidden

VOCAB, DIM = 6, 16
ACTIONS = torch.arange(2, 6)
REWARDED = {0: 3, 1: 5}


class TinyPlanner(nn.Module):
    """Position-wise trunk (trivially causal) + LM head over the small vocabulary."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.trunk = nn.Sequential(nn.Linear(DIM, DIM), nn.Tanh())
        self.lm_head = nn.Linear(DIM, VOCAB)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.trunk(self.emb(ids))  # [N, L, H]
        return hidden, self.lm_head(hidden)  # logits at l predict token l + 1


def action_logp(logits_prompt: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log p(action | prompt) restricted to the action tokens. [N, V], [N] -> [N, 1]."""
    logp = torch.log_softmax(logits_prompt[:, ACTIONS], dim=-1)
    return logp.gather(1, (actions - 2).unsqueeze(1))


@dataclass
class Run:
    policy: TinyPlanner
    head: ValueHead
    critic_losses: list[float]


def p_rewarded(policy: TinyPlanner) -> list[float]:
    with torch.no_grad():
        _, logits = policy(torch.tensor([[0], [1]]))
        probs = torch.softmax(logits[:, 0, ACTIONS], dim=-1)
    return [float(probs[c, REWARDED[c] - 2]) for c in (0, 1)]


def train(cfg: TrainConfig, num_updates: int, seed: int = 0, snapshot_at: int | None = None):
    cfg.validate()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    policy, head = TinyPlanner(), ValueHead(DIM)
    policy_opt = torch.optim.Adam(policy.parameters(), lr=cfg.policy.policy_lr)
    critic_opt = torch.optim.Adam(head.parameters(), lr=cfg.critic_lr)
    n = cfg.trajectories_per_update
    critic_losses: list[float] = []
    snapshots = []
    for update in range(num_updates):
        if snapshot_at is not None and update == snapshot_at:
            snapshots.append(
                (
                    {k: v.clone() for k, v in policy.state_dict().items()},
                    {k: v.clone() for k, v in head.state_dict().items()},
                )
            )
        # ---- rollouts (no grad) ---------------------------------------------------------
        task = torch.randint(0, 2, (cfg.rollout.tasks_per_update,), generator=gen)
        ctx = task.repeat_interleave(cfg.rollout.rollouts_per_task)
        group_ids = torch.arange(cfg.rollout.tasks_per_update).repeat_interleave(cfg.rollout.rollouts_per_task)
        with torch.no_grad():
            hidden, logits = policy(ctx.unsqueeze(1))
            probs = torch.softmax(logits[:, 0, ACTIONS], dim=-1)
            actions = torch.multinomial(probs, 1, generator=gen).squeeze(1) + 2
            old_logp = action_logp(logits[:, 0], actions)
            h_prompt = last_prompt_token_hidden(hidden, prompt_lengths=torch.ones(n, dtype=torch.long))
            values = head(h_prompt).unsqueeze(1)  # [N, T=1]
        correct = (actions == torch.tensor([REWARDED[int(c)] for c in ctx])).double()
        valid = torch.rand(n, generator=gen) > 0.1
        step_rewards = torch.where(valid, correct, torch.full_like(correct, 100.0)).unsqueeze(1)
        terminal = torch.where(valid, 2.0 * correct, torch.full_like(correct, -50.0))
        inputs = AdvantageInputs(
            step_rewards=step_rewards,
            terminal_rewards=terminal,
            step_mask=torch.ones(n, 1, dtype=torch.bool),
            valid=valid,
            group_ids=group_ids,
            gamma=cfg.advantage.gamma,
            values=values.double(),
            whiten=cfg.advantage.whiten_advantages,
        )
        out = compute_advantages(cfg.advantage.estimator, inputs)
        adv, returns = out.advantages.float(), out.returns.float()

        # ---- update -----------------------------------------------------------------------
        frozen = cfg.policy_frozen(update)
        for _ in range(cfg.policy.ppo_epochs):
            hidden, logits = policy(ctx.unsqueeze(1))
            logp = action_logp(logits[:, 0], actions)
            pol = ppo_policy_loss(
                logp, old_logp, adv[:, 0], torch.ones(n, 1, dtype=torch.bool), cfg.policy.clip_eps, valid=valid
            )
            # the critic reads the last prompt token; detached so its 100x LR never moves the policy
            v = head(
                last_prompt_token_hidden(hidden.detach(), prompt_lengths=torch.ones(n, dtype=torch.long))
            )
            crit = critic_loss(v, returns[:, 0], valid)
            critic_opt.zero_grad()
            crit.loss.backward()
            critic_opt.step()
            critic_losses.append(crit.loss.item())
            if not frozen:
                policy_opt.zero_grad()
                pol.loss.backward()
                policy_opt.step()
    return Run(policy, head, critic_losses), snapshots


def test_ppo_with_critic_learns_the_rewarded_token():
    cfg = TrainConfig().override({"rollout.tasks_per_update": 8, "rollout.rollouts_per_task": 4,
                                  "policy.policy_lr": 3e-3, "critic.critic_lr_ratio": 10.0,
                                  "critic.critic_warmup_updates": 5, "policy.ppo_epochs": 2})
    torch.manual_seed(0)
    assert max(p_rewarded(TinyPlanner())) < 0.5  # starts near uniform over 4 actions
    run, _ = train(cfg, num_updates=200)
    p = p_rewarded(run.policy)
    assert min(p) > 0.9, p
    # the critic tracks the expected return: E[G] = 3 * p(right) for both tasks
    with torch.no_grad():
        hidden, _ = run.policy(torch.tensor([[0], [1]]))
        v = run.head(hidden[:, 0])
    assert torch.allclose(v, 3 * torch.tensor(p), atol=0.35), (v, p)
    assert sum(run.critic_losses[-20:]) / 20 < sum(run.critic_losses[:20]) / 20


def test_policy_bit_identical_during_critic_warmup_while_critic_changes():
    cfg = TrainConfig().override({"rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 4,
                                  "policy.policy_lr": 3e-3, "critic.critic_lr_ratio": 100.0,
                                  "critic.critic_warmup_updates": 10})
    assert cfg.policy_frozen(9) and not cfg.policy_frozen(10)
    torch.manual_seed(0)
    initial = TinyPlanner().state_dict()
    initial_head = ValueHead(DIM).state_dict()
    # snapshot_at=10: the state after the 10 warm-up updates (0..9), before update 10
    run, snaps = train(cfg, num_updates=11, snapshot_at=10)
    after_warmup_policy, after_warmup_head = snaps[0]
    for k, v in initial.items():
        assert torch.equal(after_warmup_policy[k], v), k  # bit-identical
    assert any(not torch.equal(after_warmup_head[k], v) for k, v in initial_head.items())
    # the first update after the warm-up does move the policy
    assert any(not torch.equal(run.policy.state_dict()[k], v) for k, v in initial.items())
