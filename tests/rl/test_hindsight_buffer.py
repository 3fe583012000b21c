"""exploration.hindsight: a failed completion that reached another goal of its task becomes a
demonstration of that goal — its prompts exactly those the planner would have read had it been
given that goal, its outputs encoded there — and enters the self-imitation buffer."""
from __future__ import annotations

import pytest

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import Planner, PlannerOutput
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.hindsight import hindsight_outputs
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.worlds.phone.judges import OracleJudge
from navrl.worlds.phone.task import make_task


def _policy():
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    return PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))


class PlaysExpertOf(Planner):
    """Plays ``expert_of``'s expert on whatever task it is given (in the planner's words, as SFT's
    demonstrations), recording the policy's prompts and encoded outputs as a learning planner does."""

    def __init__(self, policy, expert_of):
        from navrl.rl.sft import TemplateTeacher
        self.policy, self.expert_of, self.teacher = policy, expert_of, TemplateTeacher(compact=True)

    def plan(self, contexts):
        outs = []
        for c in contexts:
            prompt = self.policy.prompt_text(c)
            text = self.teacher.fill(prompt, self.expert_of.expert_step(c.obs, c.device, list(c.answers)))
            ids = self.policy.encode_demo(prompt, text)
            outs.append(PlannerOutput(text, token_ids=ids, logprobs=[-0.1] * len(ids), prompt=prompt))
        return outs


def _episodes(policy, hindsight: bool = True):
    """(an episode of mail_send that sent another email than its goal's, the episode of that
    other goal itself, the other task): the same world and seed. The other email swaps the
    goal's subject and text — what a pointer planner can type is spans of what it reads, and
    the goal is what it reads here."""
    task = make_task("mail_send", 11, suite="train")
    p = {**task.params, "subject": task.params["body"], "body": task.params["subject"]}
    other = task.with_(id=task.id + "/other", params=p, goal=task.tpl.goal(p))
    judge = OracleJudge()

    def run(t):
        return EpisodeRunner(PlaysExpertOf(policy, other), AccessibilityGrounder(), judge, judge, judge,
                             config=RunnerConfig(hindsight=hindsight)).run([t])[0]
    return run(task), run(other), other


def test_relabelled_prompts_and_outputs_are_those_of_the_reached_goals_own_episode():
    pol = _policy()
    wrong, right, other = _episodes(pol)
    assert not wrong.success and right.success
    assert wrong.info["hindsight"]["goal"] == other.goal
    items, used = hindsight_outputs(pol, [wrong])
    assert used == 1 and len(items) == len(right.steps) >= 5
    # every prompt is, character for character, the one the other goal's own episode read
    assert [p for p, _ in items] == [s.prompt for s in right.steps]
    assert [ids for _, ids in items] == [list(s.token_ids) for s in right.steps]
    # ... and differs from what the failed episode read only in its goal
    assert all(p != s.prompt for (p, _), s in zip(items, wrong.steps))


def test_only_valid_failed_relabelled_trajectories_give_outputs():
    pol = _policy()
    wrong, right, _ = _episodes(pol)
    assert hindsight_outputs(pol, [right]) == ([], 0)                     # a success
    plain, _, _ = _episodes(pol, hindsight=False)
    assert "hindsight" not in plain.info and hindsight_outputs(pol, [plain]) == ([], 0)
    wrong.valid = False
    assert hindsight_outputs(pol, [wrong]) == ([], 0)                     # masked: infrastructure's
    wrong.valid = True
    wrong.steps[2].output = "Reasoning: ?\nStep: Tap \"No such button\"\nRemaining: -"
    assert hindsight_outputs(pol, [wrong]) == ([], 0)                     # a step not expressible there


def test_text_prompts_have_their_task_line_replaced():
    from navrl.agent.policy.base import Policy
    relabel = Policy.relabel_prompt
    assert relabel(None, "Task: send A\nScreen:\n- Button Send", "send B") == "Task: send B\nScreen:\n- Button Send"
    assert relabel(None, "Screen:\n- Button Send", "send B") is None


def test_hindsight_needs_self_imitation_and_snapshot_judges(tmp_path):
    with pytest.raises(ConfigError, match="exploration.hindsight puts relabelled episodes in the self-imitation"):
        TrainConfig().override({"exploration.hindsight": True}).validate()
    TrainConfig().override({"exploration.hindsight": True, "exploration.self_imitation": 0.5}).validate()
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    from navrl.worlds.web.judges import web_judges
    cfg = get_preset("demo", {"exploration.hindsight": True, "exploration.self_imitation": 0.5,
                              "policy.sft_coef": 0.0}).train
    with pytest.raises(ConfigError, match="needs a judge that takes snapshots"):
        Trainer(_policy(), cfg, tmp_path / "run", log=False, judges=web_judges())


def test_an_update_puts_the_relabelled_steps_in_the_self_imitation_buffer(tmp_path):
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    pol = _policy()
    wrong, right, _ = _episodes(pol)
    over = {"exploration.self_imitation": 0.5, "exploration.self_imitation_select": "episode", "policy.sft_coef": 0.0,
            "critic.critic_warmup_updates": 0, "run.torch_threads": 1}
    counts = {}
    for on in (False, True):
        tr = Trainer(pol, get_preset("demo", {**over, "exploration.hindsight": on}).train, tmp_path / f"run{on}", log=False)
        st = tr.learn([wrong])
        counts[on] = (len(tr.good), st.metrics["diag"].get("hindsight_episodes"))
    assert counts[False] == (0, None)          # a failed episode: nothing to imitate without hindsight
    assert counts[True] == (len(right.steps), 1)
