"""HFPlanner on tiny random Hugging Face models (a Qwen2-VL and a Qwen2 causal LM), offline, CPU.

Rollout log-probs equal score(), SFT lowers the loss, one PPO update changes exactly the
trainable parameters (LoRA on and off), checkpoints restore them, the screenshot reaches
the VLM through the prompt key and the image cache.
"""
from __future__ import annotations

import copy
import math

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("peft")

from navrl.agent.planner import PlannerContext  # noqa: E402
from navrl.agent.policy.hf import (HFPlanner, HFPlannerConfig, ImageCache, MissingImageError,  # noqa: E402
                                   split_prompt_key)
from navrl.agent.policy.hf_testing import tiny_test_model  # noqa: E402
from navrl.agent.prompt import PromptConfig, build_prompt  # noqa: E402
from navrl.observation import Observation  # noqa: E402
from navrl.rl.config import TrainConfig  # noqa: E402
from navrl.rl.sft import SFTConfig, collect_demonstrations, demo_loss, train_sft  # noqa: E402
from navrl.rl.trainer import Trainer  # noqa: E402
from navrl.worlds.phone.suites import suite_tasks  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {"vlm": tiny_test_model(root, "qwen2_vl"), "causal": tiny_test_model(root, "causal")}


def make(models, kind: str, **kw) -> HFPlanner:
    kw.setdefault("max_new_tokens", 16)
    kw.setdefault("lora_r", 4)
    kw.setdefault("device", "cpu")
    return HFPlanner(HFPlannerConfig(model=str(models[kind]), **kw))


@pytest.fixture(scope="module")
def contexts():
    """Phone-world contexts of different lengths and screens (incl. Android's screen size)."""
    tasks = suite_tasks("train", 3) + suite_tasks("test-android", 1)
    ctxs = [PlannerContext(t, t.make_device().observe()) for t in tasks]
    ctxs[1].history = [("I look around.", 'Tap "Search"'), ("Nothing yet.", "Swipe up")]
    ctxs[1].remaining = "find the item; buy it"
    ctxs[2].answers = [("Which size?", "Medium")]
    return ctxs


def _check_match(pol: HFPlanner, outs, tol: float = 1e-4, temperature: float = 1.0) -> None:
    sb = pol.score([o.prompt for o in outs], [o.token_ids for o in outs], temperature=temperature)
    for i, o in enumerate(outs):
        n = len(o.token_ids)
        assert sb.mask[i].sum() == n
        got = sb.logprobs[i, :n].detach()
        assert torch.allclose(got, torch.tensor(o.logprobs), atol=tol, rtol=0), (got, o.logprobs)
        assert torch.all(sb.logprobs[i, n:] == 0)
    assert sb.state.shape == (len(outs), pol.state_dim)
    assert sb.entropy.shape == sb.logprobs.shape


# ---------------------------------------------------------------------------------- planning
@pytest.mark.parametrize("kind", ["vlm", "causal"])
def test_plan_on_phone_world(models, contexts, kind):
    pol = make(models, kind)
    assert pol.kind == kind and pol.state_dim == 64
    assert pol.uses_image == (kind == "vlm")
    outs = pol.plan(contexts)
    assert len(outs) == len(contexts)
    for c, o in zip(contexts, outs):
        assert isinstance(o.text, str)
        assert 1 <= len(o.token_ids) <= 16 and len(o.logprobs) == len(o.token_ids)
        assert all(math.isfinite(x) and x <= 0 for x in o.logprobs)
        key, text = split_prompt_key(o.prompt)
        assert text == build_prompt(c, PromptConfig())
        if kind == "vlm":
            assert key is not None and pol.images.get(key).size[0] <= pol.config.image_max_side
        else:
            assert key is None and o.prompt == text
    # Android screenshots differ in size from iOS ones: different image keys
    if kind == "vlm":
        assert split_prompt_key(outs[0].prompt)[0] != split_prompt_key(outs[3].prompt)[0]


@pytest.mark.parametrize("kind", ["vlm", "causal"])
@pytest.mark.parametrize("sample", [True, False])
def test_rollout_logprobs_equal_score(models, contexts, kind, sample):
    pol = make(models, kind)
    pol.sample, pol.temperature = sample, 0.7
    outs = pol.plan(contexts)
    # sampled tokens carry log-probs of the tempered distribution they were drawn from
    # (the policy PPO trains); greedy ones the untempered model's
    _check_match(pol, outs, temperature=0.7 if sample else 1.0)
    if sample:
        untempered = pol.score([o.prompt for o in outs], [o.token_ids for o in outs]).logprobs
        recorded = torch.cat([torch.tensor(o.logprobs) for o in outs])
        assert not torch.allclose(torch.cat([untempered[i, :len(o.token_ids)] for i, o in enumerate(outs)]),
                                  recorded, atol=1e-3)
    if not sample:   # greedy decoding is deterministic, and each token is the argmax
        assert [o.token_ids for o in pol.plan(contexts)] == [o.token_ids for o in outs]


def test_vlm_text_only_and_split_generation_batches(models, contexts):
    pol = make(models, "vlm", use_image=False, gen_batch_size=3)
    assert not pol.uses_image
    outs = pol.plan(contexts)
    assert all(split_prompt_key(o.prompt)[0] is None for o in outs)
    _check_match(pol, outs)
    with pytest.raises(ValueError, match="takes no images"):
        pol.score([make(models, "vlm").prompt_text(contexts[0])], [[pol.eos_id]])


def test_state_is_read_before_the_output(models, contexts):
    pol = make(models, "vlm")
    prompts = [pol.prompt_text(c) for c in contexts[:2]]
    t1, t2 = pol.encode_target("Step: Go home"), pol.encode_target('Reasoning: a\nStep: Tap "Mail"')
    a = pol.score(prompts, [t1, t2]).state
    b = pol.score(prompts, [t2[:3], t1]).state
    assert torch.allclose(a, b, atol=1e-5)


def test_vlm_sees_the_screenshot(models, contexts):
    pol = make(models, "vlm")
    key0, text = split_prompt_key(pol.prompt_text(contexts[0]))
    key1 = split_prompt_key(pol.prompt_text(contexts[3]))[0]
    out = [pol.encode_target('Reasoning: x\nStep: Tap "Search"\nRemaining: y')]
    lp0 = pol.score([f"<navrl-image:{key0}>\n{text}"], out).logprobs
    lp1 = pol.score([f"<navrl-image:{key1}>\n{text}"], out).logprobs
    assert not torch.allclose(lp0, lp1)


def test_vlm_mixed_batch_with_a_text_only_row(models, contexts):
    pol = make(models, "vlm")
    o = contexts[0].obs
    blind = PlannerContext(contexts[0].task, Observation(o.nodes, o.app, o.screen_size, o.platform))
    assert not blind.obs.has_screenshot
    outs = pol.plan([contexts[1], blind, contexts[3]])
    assert split_prompt_key(outs[1].prompt)[0] is None
    assert split_prompt_key(outs[0].prompt)[0] is not None
    _check_match(pol, outs)


def test_vision_placeholders_are_never_generated(models, contexts):
    pol = make(models, "vlm")
    assert pol.image_token_id in pol.banned_ids

    def favour(_mod, _args, out):   # make the placeholder the model's overwhelming favourite
        out = out.clone()
        out[..., pol.image_token_id] = 1e4
        return out

    h = pol.model.get_output_embeddings().register_forward_hook(favour)
    try:
        outs = pol.plan(contexts[:2])
        assert all(pol.image_token_id not in o.token_ids for o in outs)
        _check_match(pol, outs)
    finally:
        h.remove()


def test_encode_target_ends_with_eos(models):
    pol = make(models, "causal")
    ids = pol.encode_target("Step: Go home")
    assert ids[-1] == pol.eos_id and pol.decode(ids) == "Step: Go home"
    assert len(pol.encode_target("word " * 500)) == pol.config.max_new_tokens


# ---------------------------------------------------------------------------------- image cache
def test_image_cache_eviction_store_and_deepcopy(tmp_path, contexts):
    im = contexts[0].obs.screenshot
    small = ImageCache(capacity=1)
    k0 = small.put(im)
    k1 = small.put(contexts[3].obs.screenshot)
    assert small.get(k1).size == contexts[3].obs.screenshot.size
    with pytest.raises(MissingImageError, match="image_cache_size"):
        small.get(k0)
    stored = ImageCache(capacity=1, store_dir=tmp_path / "img")
    k0 = stored.put(im)
    stored.put(contexts[3].obs.screenshot)
    assert stored.get(k0).tobytes() == im.convert("RGB").tobytes()   # lossless, from disk
    assert copy.deepcopy(stored) is stored
    assert ImageCache(store_dir=tmp_path / "img").get(k0).size == im.size       # another process


def test_reference_policy_copy_shares_the_image_cache(models, contexts):
    pol = make(models, "vlm")
    ref = copy.deepcopy(pol)
    assert ref.images is pol.images
    outs = pol.plan(contexts[:2])
    _check_match(ref, outs)


# ---------------------------------------------------------------------------------- SFT
@pytest.mark.parametrize("kind,lora", [("vlm", True), ("causal", False)])
def test_sft_lowers_the_loss(models, kind, lora):
    pol = make(models, kind, use_lora=lora, lora_r=8)
    demos = collect_demonstrations(pol, 2)
    assert demos and all(split_prompt_key(d.prompt)[0] is not None for d in demos) == (kind == "vlm")
    with torch.no_grad():
        before = float(demo_loss(pol, demos))
    res = train_sft(pol, demos, SFTConfig(n_tasks=2, epochs=3, lr=1e-2 if lora else 3e-3, batch_size=4,
                                          heldout_frac=0.2))
    with torch.no_grad():
        after = float(demo_loss(pol, demos))
    assert after < before - 0.1
    assert res.heldout_after < res.heldout_before


# ---------------------------------------------------------------------------------- PPO
def _tiny_train_cfg(**kw) -> TrainConfig:
    """(``kw``: policy-section fields)"""
    base = {"rollout.tasks_per_update": 1, "rollout.rollouts_per_task": 2, "rollout.max_steps": 2,
            "critic.critic_warmup_updates": 0, "policy.minibatch_size": 16, "run.eval_every": 0, "run.torch_threads": 1,
            "policy.policy_lr": 1e-3, "critic.critic_steps": 1}
    return TrainConfig().override({**base, **{f"policy.{k}": v for k, v in kw.items()}})


@pytest.mark.parametrize("kind,lora", [("vlm", True), ("vlm", False), ("causal", True)])
def test_one_ppo_update_changes_only_the_trainable_parameters(models, tmp_path, kind, lora):
    pol = make(models, kind, use_lora=lora)
    named = dict(pol.model.named_parameters())
    trainable = {n for n, p in named.items() if p.requires_grad}
    assert {id(p) for p in pol.policy_parameters()} == {id(named[n]) for n in trainable}
    if lora:
        assert trainable and all("lora_" in n for n in trainable)
    elif kind == "vlm":
        assert not any("visual" in n for n in trainable)          # the vision tower stays frozen
    before = {n: p.detach().clone() for n, p in named.items()}
    tr = Trainer(pol, _tiny_train_cfg(), tmp_path, log=False)
    m = tr.train_step().metrics
    assert m["samples"] >= 2 and not m["policy_frozen"]
    # one minibatch, first pass: the re-scored log-probs are the rollout's (ratio 1)
    assert abs(m["policy/ratio_mean"] - 1.0) < 1e-4 and abs(m["policy/approx_kl"]) < 1e-5
    changed = {n for n, p in named.items() if not torch.equal(p.detach(), before[n])}
    assert changed and changed <= trainable
    assert all(torch.isfinite(named[n]).all() for n in changed)


def test_ppo_with_kl_to_a_reference_copy_and_an_entropy_bonus(models, tmp_path):
    pol = make(models, "vlm")
    tr = Trainer(pol, _tiny_train_cfg(kl_coef=0.1, entropy_coef=0.01), tmp_path, log=False)
    m = tr.train_step().metrics
    assert abs(m["policy/kl_ref"]) < 1e-5 and m["policy/entropy"] > 0
    assert all(torch.isfinite(p).all() for p in pol.policy_parameters())


# ---------------------------------------------------------------------------------- checkpoints
def test_state_dict_round_trip_through_a_trainer_checkpoint(models, contexts, tmp_path):
    pol = make(models, "vlm", image_store=str(tmp_path / "img"))
    tr = Trainer(pol, _tiny_train_cfg(), tmp_path / "run", log=False)
    tr.train_step()
    st = pol.state_dict_all()
    assert set(st["trainable"]) == {n for n, p in pol.model.named_parameters() if p.requires_grad}
    assert all("lora_" in n for n in st["trainable"]) and st["config"]["model"] == str(models["vlm"])
    path = tr.save_checkpoint()
    outs = pol.plan(contexts[:2])
    fresh = make(models, "vlm", image_store=str(tmp_path / "img"))       # a new process: empty memory cache
    tr2 = Trainer(fresh, _tiny_train_cfg(), tmp_path / "run2", log=False)
    tr2.load_checkpoint(path)
    _check_match(fresh, outs)
    again = HFPlanner.from_state(st, device="cpu")
    _check_match(again, outs)
    with pytest.raises(ValueError, match="trainable parameters differ"):
        make(models, "vlm", lora_targets=("q_proj",)).load_state_dict_all(st)


def test_gradient_checkpointing_gives_the_same_scores(models, contexts):
    a = make(models, "causal", use_lora=False)
    b = make(models, "causal", use_lora=False, gradient_checkpointing=True)
    assert any(getattr(m, "gradient_checkpointing", False) is True for m in b.model.modules())
    outs = a.plan(contexts[:2])
    sa = a.score([o.prompt for o in outs], [o.token_ids for o in outs])
    sb = b.score([o.prompt for o in outs], [o.token_ids for o in outs])
    assert torch.allclose(sa.logprobs, sb.logprobs, atol=1e-5)
    (-sb.logprobs.sum()).backward()
    assert all(p.grad is not None for p in b.policy_parameters())


def test_config_errors(models):
    with pytest.raises(ValueError, match="empty"):
        HFPlanner(HFPlannerConfig())
    with pytest.raises(ValueError, match="dtype"):
        make(models, "causal", dtype="int8")
    with pytest.raises(ValueError, match="unknown HFPlannerConfig fields"):
        HFPlannerConfig.from_dict({"model": "x", "lora_rank": 3})
    with pytest.raises(OSError):
        HFPlanner(HFPlannerConfig(model="/nonexistent/model-dir"))
