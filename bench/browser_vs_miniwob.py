"""navrl's browser device vs the ``miniwob`` package's own Gymnasium environment, in one run.

Same 10 MiniWoB++ tasks, same seeds, same actions, same observations:

- **navrl**: :class:`navrl.device.browser.BrowserDevice` (Playwright, one Chromium, the page's
  own reset hook); each episode is the scripted solution in navrl's Step language, grounded
  by the accessibility grounder. Every reset and every step ends with an observation whose
  screenshot is decoded to pixels and whose UI tree is read.
- **miniwob**: ``gymnasium.make("miniwob/<task>-v1")`` (Selenium, Debian's chromedriver and
  Chromium), replaying the same actions as ``CLICK_COORDS`` / ``TYPE_TEXT`` at the same CSS
  coordinates; its observation is its screenshot (decoded, 160x210) and its DOM element list.

"Equal observations" means equal screenshots: navrl runs on a bare 160x210 touch screen at
scale 1 (``phone="160x210@1"``), the exact frame miniwob returns. For reference the same
episodes also run on the default phone (iPhone 13, 1170x1989-pixel screenshots).

Timings interleave the two sides episode by episode (so load on the machine hits both
alike), after warm-up episodes, and report medians: reset = start of an episode to its
first observation; step = action to the next observation. The miniwob environment returns
an empty observation (no screenshot, no DOM) once an episode is done, so its final steps
do less work; steps are reported three ways: those that observe on both sides (the equal
comparison), final steps, and all. Printed: per-task figures and the ratios, with the
targets (navrl resets >= 2x faster and steps >= 1.5x faster).

    python bench/browser_vs_miniwob.py [--seeds 8] [--warmup 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time

import numpy as np

TASKS = ["click-test", "click-button", "click-link", "enter-text", "focus-text", "click-dialog", "click-checkboxes",
         "login-user", "click-option", "enter-password"]
EQUAL = "160x210@1"


def need(cond: bool, msg: str) -> None:
    if not cond:
        print(f"browser_vs_miniwob: skipped: {msg}")
        sys.exit(0)


def navrl_episode(dev, task, grounder) -> tuple[float, list[float], list, float]:
    """(reset s, step s list, actions in CSS px, raw reward) of one scripted episode."""
    from navrl.actions import ActionKind
    from navrl.worlds.web.tasks import scripted_step
    t0 = time.perf_counter()
    dev.restore(task.web_snapshot())
    obs = dev.observe()
    np.asarray(obs.screenshot)
    reset = time.perf_counter() - t0
    steps, actions = [], []
    for _ in range(task.max_steps):
        _, step, _ = scripted_step(task, obs, dev)
        if step == "Complete":
            break
        a = grounder.ground(step, obs)
        t0 = time.perf_counter()
        dev.act(a)
        obs = dev.observe()
        np.asarray(obs.screenshot)
        steps.append(time.perf_counter() - t0)
        if a.kind is ActionKind.TAP:
            actions.append(("click", dev.emulation.to_css(a.x, a.y)))
        elif a.kind is ActionKind.TYPE:
            actions.append(("type", a.text))
        else:
            raise RuntimeError(f"{task.template}: {a.kind} has no miniwob counterpart")
    return reset, steps, actions, float(obs.page.get("raw_reward") or 0) if obs.page.get("done") else 0.0


def miniwob_episode(env, seed: int, actions: list) -> tuple[float, list[float], float]:
    from miniwob.action import ActionTypes
    u = env.unwrapped
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed)
    assert obs["screenshot"].shape == (210, 160, 3) and len(obs["dom_elements"]) > 0
    reset = time.perf_counter() - t0
    steps, reward, done = [], 0.0, False
    for kind, arg in actions:
        if kind == "click":
            a = u.create_action(ActionTypes.CLICK_COORDS, coords=np.array(arg, dtype=np.float32))
        else:
            a = u.create_action(ActionTypes.TYPE_TEXT, text=arg)
        t0 = time.perf_counter()
        obs, r, done, trunc, info = env.step(a)
        steps.append((time.perf_counter() - t0, bool(done)))
        if done:
            reward = float(info.get("raw_reward", r))
            break
    return reset, steps, reward


def med_ms(xs: list[float]) -> float:
    return 1000 * statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8, help="timed episodes per task and side")
    ap.add_argument("--warmup", type=int, default=2, help="untimed episodes per task and side first")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--no-phone", action="store_true", help="skip the reference run on the default phone")
    args = ap.parse_args()

    from navrl.device.browser import browser_ready
    why = browser_ready()
    need(why is None, why or "")
    try:
        import gymnasium
        import miniwob  # noqa: F401
        import selenium  # noqa: F401
    except ImportError as e:
        need(False, f"{e} (pip install 'navrl[browser]' selenium)")
    chromium = os.environ.get("MINIWOB_CHROME_BINARY") or shutil.which("chromium")
    driver = os.environ.get("MINIWOB_CHROMEDRIVER") or shutil.which("chromedriver")
    need(bool(chromium and driver), "the miniwob environment needs chromium and chromedriver (apt-get install "
                                    "chromium chromium-driver)")
    os.environ["MINIWOB_CHROME_BINARY"], os.environ["MINIWOB_CHROMEDRIVER"] = chromium, driver
    gymnasium.register_envs(miniwob)

    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.device.browser import BrowserDevice
    from navrl.device.browser.host import default_host
    from navrl.worlds.web.tasks import miniwob_task

    names = [t for t in args.tasks.split(",") if t]
    g = AccessibilityGrounder()
    host = default_host()
    host.ensure_started()
    eq = BrowserDevice(phone=EQUAL, host=host)
    phone = None if args.no_phone else BrowserDevice(phone="iphone", host=host)
    rows = []
    tot = {k: [] for k in ("n_reset", "n_step", "m_reset", "m_step", "p_reset", "p_step", "n_obs", "m_obs",
                           "n_fin", "m_fin")}
    wins = {"navrl": 0, "miniwob": 0, "phone": 0, "episodes": 0}
    print(f"navrl {EQUAL} (screenshot 160x210 decoded + UI tree) vs miniwob gymnasium env "
          f"(screenshot 160x210 decoded + DOM elements); {args.seeds} timed + {args.warmup} warm-up episodes per task")
    print(f"{'task':18s} {'navrl reset':>11s} {'miniwob':>8s} {'ratio':>6s}   {'navrl step':>10s} {'miniwob':>8s} "
          f"{'ratio':>6s}   {'phone reset/step':>16s}  rewards n/m   (step: observing steps; * = final steps only)")
    for name in names:
        t0 = time.perf_counter()
        env = gymnasium.make(f"miniwob/{name}-v1")
        env_start = time.perf_counter() - t0
        nr, ns, mr, ms, pr, ps = [], [], [], [], [], []
        n_obs, m_obs, n_fin, m_fin = [], [], [], []
        rew_n = rew_m = 0
        for i in range(args.warmup + args.seeds):
            seed = 1000 + i
            task = miniwob_task(name, seed, phone=EQUAL)
            a_reset, a_steps, actions, a_rew = navrl_episode(eq, task, g)
            b_reset, b_steps, b_rew = miniwob_episode(env, seed, actions)
            if phone is not None:
                c_reset, c_steps, _, c_rew = navrl_episode(phone, miniwob_task(name, seed, phone="iphone"), g)
            if i < args.warmup:
                continue
            nr.append(a_reset), mr.append(b_reset)
            ns += a_steps
            ms += [t for t, _ in b_steps]
            for na, (mb, done) in zip(a_steps, b_steps):
                (n_fin if done else n_obs).append(na)
                (m_fin if done else m_obs).append(mb)
            rew_n += a_rew > 0
            rew_m += b_rew > 0
            if phone is not None:
                pr.append(c_reset)
                ps += c_steps
                wins["phone"] += c_rew > 0
        env.close()
        wins["navrl"] += rew_n
        wins["miniwob"] += rew_m
        wins["episodes"] += args.seeds
        star = "" if n_obs else "*"
        so_n, so_m = (n_obs, m_obs) if n_obs else (n_fin, m_fin)
        row = (name, med_ms(nr), med_ms(mr), med_ms(so_n), med_ms(so_m), med_ms(pr), med_ms(ps))
        rows.append(row)
        for k, v in zip(tot, (nr, ns, mr, ms, pr, ps, n_obs, m_obs, n_fin, m_fin)):
            tot[k] += v
        ph = f"{row[5]:6.1f}/{row[6]:5.1f} ms" if phone is not None else "-"
        print(f"{name:18s} {row[1]:8.1f} ms {row[2]:5.1f} ms {row[2] / row[1]:5.2f}x   {row[3]:7.1f} ms {row[4]:5.1f} ms "
              f"{row[4] / row[3]:5.2f}x{star:1s}  {ph:>16s}  {rew_n}/{rew_m}   (miniwob env start {env_start:.1f} s)")
    n_reset, m_reset = med_ms(tot["n_reset"]), med_ms(tot["m_reset"])
    n_step, m_step = med_ms(tot["n_obs"]), med_ms(tot["m_obs"])
    r_reset, r_step = m_reset / n_reset, m_step / n_step
    print()
    print(f"all tasks (medians): reset navrl {n_reset:.1f} ms vs miniwob {m_reset:.1f} ms -> navrl resets "
          f"{r_reset:.2f}x faster (target >= 2x: {'met' if r_reset >= 2 else 'NOT met'})")
    print(f"  steps observed on both sides ({len(tot['n_obs'])}): navrl {n_step:.1f} ms vs miniwob {m_step:.1f} ms -> "
          f"navrl steps {r_step:.2f}x faster; {1000 / n_step:.1f} vs {1000 / m_step:.1f} steps/s "
          f"(target >= 1.5x: {'met' if r_step >= 1.5 else 'NOT met'})")
    f_n, f_m = med_ms(tot["n_fin"]), med_ms(tot["m_fin"])
    a_n, a_m = med_ms(tot["n_step"]), med_ms(tot["m_step"])
    print(f"  final steps ({len(tot['n_fin'])}; miniwob returns an empty observation): navrl {f_n:.1f} ms vs "
          f"miniwob {f_m:.1f} ms ({f_m / f_n:.2f}x)")
    print(f"  all steps ({len(tot['n_step'])}): navrl {a_n:.1f} ms vs miniwob {a_m:.1f} ms ({a_m / a_n:.2f}x); "
          f"{1000 / a_n:.1f} vs {1000 / a_m:.1f} steps/s")
    if phone is not None:
        print(f"reference, navrl on the default phone (iPhone 13, 1170x1989 screenshots): reset "
              f"{med_ms(tot['p_reset']):.1f} ms, step {med_ms(tot['p_step']):.1f} ms "
              f"({m_reset / med_ms(tot['p_reset']):.2f}x / {m_step / med_ms(tot['p_step']):.2f}x the miniwob env)")
    print(f"reward 1 in {wins['navrl']}/{wins['episodes']} navrl episodes, {wins['miniwob']}/{wins['episodes']} "
          f"miniwob replays" + (f", {wins['phone']}/{wins['episodes']} on the phone" if phone is not None else ""))
    eq.close()
    if phone is not None:
        phone.close()


if __name__ == "__main__":
    main()
