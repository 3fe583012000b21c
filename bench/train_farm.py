"""``navrl train`` on MiniWoB++ with the browser farm it sizes itself, watched from outside.

Runs one ``navrl train --suite miniwob ...`` command (everything after ``--`` is passed on;
default: the command of issue #27 with 3 updates) in a child process, optionally beside
``--busy N`` CPU-bound processes (``while True: pass``, killed afterwards), and samples
``/proc`` every ``--every`` seconds for the Chromium renderer processes below the child.
Prints the exit code, wall time, masked rollouts (from the run's metrics.jsonl), the peak
renderer count, the farm line the command printed, and how many renderer processes seen
during the run still exist after it exited (they must be 0). Prints; asserts nothing.

    navrl sft --preset demo --suite miniwob --tasks click-test,click-button,enter-text --out runs/bc3
    nice python bench/train_farm.py --init runs/bc3/sft.pt [--busy 2] [--out DIR] [-- navrl train args...]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

DEFAULT = ["--preset", "demo", "--suite", "miniwob", "--tasks", "click-test,click-button,enter-text",
           "--updates", "3"]


def renderers_below(root: int) -> list[int]:
    from navrl.device.browser.chromium import renderer_processes
    return renderer_processes(root)


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else None
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes to run beside it")
    ap.add_argument("--out", default="/tmp/bench-train-farm")
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--init", default="runs/bc3/sft.pt", help="the BC policy (navrl sft --suite miniwob ...)")
    ap.add_argument("--batch", type=int, default=128, help="rollouts per update (the demo preset's 128)")
    args = ap.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    navrl = str(Path(sys.executable).with_name("navrl"))
    cmd = [navrl, "train", *(extra or DEFAULT + ["--init", args.init]), "--out", args.out]
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    print(f"load {os.getloadavg()[0]:.1f} before; {args.busy} busy processes beside it\n$ {' '.join(cmd)}", flush=True)
    seen: set[int] = set()
    peak = [0]
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stop = threading.Event()
    loads: list[float] = []

    def sample() -> None:
        while not stop.wait(args.every):
            r = renderers_below(child.pid)
            seen.update(r)
            peak[0] = max(peak[0], len(r))
            loads.append(os.getloadavg()[0])
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    lines = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line.rstrip())
        rc = child.wait()
    finally:
        stop.set()
        th.join()
        for p in busy:
            p.kill()
            p.wait()
    wall = time.perf_counter() - t0
    time.sleep(1.0)
    left = [p for p in seen if Path(f"/proc/{p}").exists()]
    rows = []
    mf = Path(args.out) / "metrics.jsonl"
    if mf.exists():
        rows = [json.loads(x) for x in mf.read_text().splitlines() if x.strip()]
    upd = [r for r in rows if r.get("kind") == "update"]
    total = masked = 0
    reasons: dict[str, int] = {}
    for r in upd:
        frac = r.get("masked_fraction") or 0.0
        n = round(r["masked"] / frac) if frac else args.batch
        masked += r.get("masked", 0)
        total += n
        for k, v in (r.get("masked_reasons") or {}).items():
            reasons[k] = reasons.get(k, 0) + v
    steps = sum((r.get("episode_length") or 0) * (args.batch - r.get("masked", 0)) for r in upd)
    roll = sum((r.get("time") or {}).get("rollout", 0.0) for r in upd)
    learn = sum((r.get("time") or {}).get("update", 0.0) for r in upd)
    for line in lines:
        if line.startswith(("device farm", "infrastructure", "error", "navrl:")) or "Outage" in line:
            print("  | " + line)
    print(f"exit {rc}; wall {wall:.0f} s; updates {len(upd)}; masked {masked}/{total} "
          f"({100 * masked / max(1, total):.1f}%) {reasons or ''}")
    print(f"rollouts: {steps:.0f} environment steps in {roll:.0f} s of rollout time ({steps / max(roll, 1e-9):.1f} "
          f"steps/s); updates {learn:.0f} s")
    print(f"renderer processes: peak {peak[0]}, {len(seen)} seen in all, {len(left)} left after exit; "
          f"load mean {sum(loads) / max(1, len(loads)):.1f} max {max(loads, default=0):.1f}")
    if rc != 0:
        print("\n".join(lines[-15:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
