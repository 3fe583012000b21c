"""The phone world as a device: determinism, snapshots, bad actions, faults, Gymnasium."""
from __future__ import annotations

import random

import pytest

from navrl.actions import Action, ActionError
from navrl.device.base import DeviceError
from navrl.worlds.phone.sim import FaultConfig, PerturbConfig, PhoneWorld
from navrl.worlds.phone.sim.apps import app_names
from navrl.worlds.phone.expert import intent_action, run_expert, expert_step
from navrl.worlds.phone.task import make_task, templates
from navrl.worlds.phone.suites import SUITES, suite_tasks, suite_templates


def _random_walk(world: PhoneWorld, rng: random.Random, n: int) -> list[Action]:
    acts = []
    for _ in range(n):
        obs = world.observe()
        tappable = [x for x in obs.nodes if "tap" in x.actions]
        r = rng.random()
        if r < 0.75 and tappable:
            a = Action.tap(*rng.choice(tappable).center)
        elif r < 0.85:
            a = Action.swipe(rng.choice(["up", "down"]))
        elif r < 0.95:
            a = Action.type(rng.choice(["a", "Paris", "shoes"]))
        else:
            a = Action.home()
        world.act(a)
        acts.append(a)
    return acts


def test_at_least_twelve_apps_and_forty_templates() -> None:
    names = set(app_names())
    assert len(names) >= 12, names
    assert len(templates()) >= 40
    fams = {t.family.value for t in templates().values()}
    assert {"single", "multi", "answer", "ask_user", "blocked"} <= fams
    assert sum(1 for t in templates().values() if t.family.value == "multi") >= 8


def test_restore_gives_byte_identical_screens_and_trees() -> None:
    w = PhoneWorld(seed=7)
    rng = random.Random(0)
    _random_walk(w, rng, 15)
    snap = w.snapshot()
    png0, nodes0 = w.observe().png, w.observe().nodes
    _random_walk(w, rng, 20)
    w.restore(snap)
    o = w.observe()
    assert o.nodes == nodes0
    assert o.png == png0


def test_same_seed_same_actions_identical_frames() -> None:
    for skin in ("ios", "android"):
        acts = _random_walk(PhoneWorld(seed=11, skin=skin), random.Random(5), 25)
        c, d = PhoneWorld(seed=11, skin=skin), PhoneWorld(seed=11, skin=skin)
        frames_c, frames_d = [c.observe().png], [d.observe().png]
        for act in acts:
            c.act(act)
            d.act(act)
            frames_c.append(c.observe().png)
            frames_d.append(d.observe().png)
        assert frames_c == frames_d
        assert len(set(frames_c)) > 3          # the walk really went somewhere


def test_off_screen_tap_raises_clear_error_and_changes_nothing() -> None:
    w = PhoneWorld(seed=1)
    before = w.snapshot()
    with pytest.raises(ActionError, match="outside"):
        w.act(Action.tap(5000, 10))
    with pytest.raises(ActionError, match="outside"):
        w.act(Action.swipe("up", -1, 3))
    assert w.snapshot() == before


def test_type_without_focus_changes_nothing() -> None:
    w = PhoneWorld(seed=1)
    before = w.snapshot()
    res = w.act(Action.type("hello"))
    assert not res.changed and "focus" in res.note
    after = w.snapshot()
    import pickle
    s0, s1 = pickle.loads(before), pickle.loads(after)
    assert s0.fields == s1.fields and s0.fg == s1.fg and s0.data == s1.data


def test_tap_on_nothing_changes_nothing() -> None:
    w = PhoneWorld(seed=1)
    obs = w.observe()
    x, y = obs.screen_size[0] - 3, obs.screen_size[1] - 30
    assert not any(n.contains(x, y) if hasattr(n, "contains") else False for n in obs.nodes)
    res = w.act(Action.tap(x, y))
    assert not res.changed


def test_unknown_app_and_bad_config_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown skin"):
        PhoneWorld(skin="windows-phone")
    with pytest.raises(ValueError, match="layout"):
        PhoneWorld(layout="weird")
    w = PhoneWorld(seed=0)
    with pytest.raises(ValueError, match="unknown app"):
        w._open_app("NoSuchApp", None, {})
    with pytest.raises(ValueError, match="not in"):
        PhoneWorld(perturb=PerturbConfig(popup=1.5))


def test_episode_actions_are_not_device_actions() -> None:
    w = PhoneWorld(seed=0)
    with pytest.raises(ValueError):
        w.act(Action.complete())


def test_injected_faults_raise_device_error() -> None:
    w = PhoneWorld(seed=0, faults=FaultConfig(lose_at_step=3))
    _random_walk(w, random.Random(1), 3)
    with pytest.raises(DeviceError) as e:
        w.act(Action.home())
    assert e.value.reason == "device_lost"
    assert not w.health().ok
    with pytest.raises(DeviceError):
        w.observe()
    w2 = PhoneWorld(seed=0, faults=FaultConfig(app_never_loads=1.0))
    settings = next(n for n in w2.observe().nodes if n.label == "Settings")
    with pytest.raises(DeviceError) as e2:
        w2.act(Action.tap(*settings.center))
    assert e2.value.reason == "app_never_loads"


def test_perturbations_show_up_and_expert_handles_them() -> None:
    seen = {"popup": 0, "consent": 0, "loading": 0}
    p = PerturbConfig(popup=0.5, consent=0.5, loading=0.3)
    ok = 0
    for seed in range(30):
        task = make_task("shop_checkout", seed, perturb=p)
        w = task.make_device()

        def watch(step, obs, w=w):
            ov = w.state.overlay
            if ov and ov.get("owner") == "world":
                seen["popup" if ov["id"] == "popup" else "consent"] += 1
            if w.state.loading:
                seen["loading"] += 1
        run = run_expert(task, w, on_step=watch)
        ok += run.success
    assert all(v > 0 for v in seen.values()), seen
    assert ok >= 29


def test_skins_differ_like_platforms() -> None:
    ios, android = PhoneWorld(seed=0, skin="ios"), PhoneWorld(seed=0, skin="android")
    assert ios.observe().screen_size != android.observe().screen_size
    labels_a = {n.label for n in android.observe().nodes}
    assert {"Back", "Home", "Overview"} <= labels_a        # the Android system bar
    assert "Overview" not in {n.label for n in ios.observe().nodes}
    t_ios, t_and = make_task("shop_add_to_bag", 1), make_task("shop_add_to_bag", 1, skin="android")
    steps_ios = [s.step for s in run_expert(t_ios.with_(perturb=PerturbConfig.off())).steps]
    steps_and = [s.step for s in run_expert(t_and.with_(perturb=PerturbConfig.off())).steps]
    assert 'Tap "Add to Bag"' in steps_ios and 'Tap "Add to cart"' in steps_and


def test_suites_are_disjoint_where_they_must_be() -> None:
    train = {t.name for t in suite_templates("train")}
    test_ios = {t.name for t in suite_templates("test-ios")}
    unseen = {t.name for t in suite_templates("test-unseen")}
    assert train < test_ios                     # held-out templates only in test
    assert unseen - test_ios                    # unseen apps only in test-unseen
    assert all(not templates()[n].heldout for n in train)
    tr = {t.seed for t in suite_tasks("train", 50)}
    te = {t.seed for t in suite_tasks("test-ios", 50)}
    assert not tr & te
    assert {t.skin for t in suite_tasks("test-android", 10)} == {"android"}
    assert {t.layout for t in suite_tasks("test-unseen", 10)} == {"alt"}


def test_val_suite_holds_train_templates_on_seeds_training_never_draws() -> None:
    import random

    from navrl.tasks.registry import get_suite
    from navrl.worlds.phone.suites import SEED_BLOCK, TRAIN_SEEDS, sample_tasks
    assert [t.name for t in suite_templates("val")] == [t.name for t in suite_templates("train")]
    val = suite_tasks("val", 300) + suite_tasks("val", 50, seed=3)
    assert {t.template for t in val} <= {t.name for t in suite_templates("train")}
    assert {(t.skin, t.layout) for t in val} == {("ios", "default")}
    assert all(t.perturb == suite_tasks("train", 1)[0].perturb for t in val)   # train's perturbations
    # RL draws train seeds from range(TRAIN_SEEDS); SFT and train evaluations take blocks seed * SEED_BLOCK + i
    drawn = {t.seed for t in sample_tasks("train", 2000, random.Random(0))}
    assert max(drawn) < TRAIN_SEEDS
    val_seeds = {t.seed for t in val}
    assert not val_seeds & set(range(TRAIN_SEEDS))
    train_blocks = {t.seed for s in range(10) for t in suite_tasks("train", 600, seed=s)}
    assert not val_seeds & train_blocks
    assert min(val_seeds) >= 4_000_000 and max(val_seeds) < 4_000_000 + 10 * SEED_BLOCK
    # other suites' blocks: none of them reaches val's
    for name in ("test-ios", "test-android", "test-unseen"):
        assert not val_seeds & {t.seed for t in suite_tasks(name, 300)}
    # registered: `navrl eval --suite val`
    assert [t.id for t in get_suite("val").tasks(4, 0)] == [t.id for t in suite_tasks("val", 4)]
    assert get_suite("val").tasks(4, 0)[0].id.startswith("val:")


def test_expert_remaining_plan_and_format() -> None:
    task = make_task("shop_checkout", 0, perturb=PerturbConfig.off())
    w = task.make_device()
    s = expert_step(task, w)
    text = s.text()
    assert text.startswith("Reasoning: ") and "\nStep: " in text and "\nRemaining: " in text
    assert s.step == 'Tap "Shop"'
    assert intent_action(w.observe(), s.intent) is not None


def test_gymnasium_env_passes_check_env() -> None:
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    import navrl  # noqa: F401  (registers the env)
    env = gym.make("navrl/PhoneWorld-v0", suite="test-ios")
    check_env(env.unwrapped, skip_render_check=False)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"screenshot", "ui", "goal"}
    # the expert's steps, fed as text actions, solve the task with the paper's rewards
    task = env.unwrapped.task
    total, done = 0.0, False
    for _ in range(task.max_steps):
        s = expert_step(task, env.unwrapped.device, env.unwrapped.memory)
        obs, r, term, trunc, info = env.step(s.step)
        total += r
        if term or trunc:
            break
    assert info.get("success") is True
    assert total >= 2.0
