"""``navrl experiment miniwob``: MiniWoB++ as a learning benchmark (BC-only, BC + RL, RL-only).

One multi-task policy for all the config's tasks (as CC-Net): behaviour cloning from the
scripted solutions where a task has one, then online RL with navrl's trainer on fresh
instances of every task (the page's reward as terminal judge, a pool of browser pages);
and RL from an untrained policy. Each is evaluated on the same fresh instances per task
(paired). Writes ``results.md`` (per task: the three methods with 95% intervals next to the
published anchors of ``configs/miniwob_anchors.csv`` where present), ``results.csv``,
``anchors.csv`` (those anchors for the run's tasks), ``curves.png`` (training success per
update) and ``results.json`` (config, commit, command, throughput: environment steps per
second during RL, the share of rollout time waiting on the browser vs in the planner, and the
CPU seconds of the browser vs the learner).
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from navrl.agent.policy.base import greedy
from navrl.eval import evaluate, paired_counts, paired_difference_interval, summarize
from navrl.experiments.common import child_cpu_seconds, load_config_file
from navrl.provenance import provenance
from navrl.experiments.pipeline import build_policy, load_policy, save_policy
from navrl.fileio import atomic_write_bytes, atomic_write_text
from navrl.judge.sets import make_judges
from navrl.rl.callbacks import CheckpointCallback, ProgressCallback
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.demo_file import DemoFileError, load_demonstrations, save_demonstrations
from navrl.rl.presets import get_preset
from navrl.rl.sft import TemplateTeacher, collect_demonstrations, train_sft
from navrl.rl.trainer import Trainer
from navrl.tasks.registry import SuiteOptions, get_suite

METHODS = ("bc", "bc_rl", "rl")
LABELS = {"bc": "BC only", "bc_rl": "BC + RL", "rl": "RL only"}
ANCHORS = Path(__file__).resolve().parent / "configs" / "miniwob_anchors.csv"
ANCHOR_COLUMNS = (("wge", "WGE"), ("domqnet", "DOM-Q-NET"), ("qweb", "QWeb"), ("ccnet_bc", "CC-Net BC"),
                  ("ccnet_bc_rl", "CC-Net BC+RL"), ("webn_t5", "WebN-T5"), ("webgum", "WebGUM"),
                  ("html_t5", "HTML-T5"))
"""The anchor columns the table prints, in this order (sources: ``configs/miniwob_anchors.md``);
a column with no value for any of the run's tasks is left out."""
EVAL_SEED = 7    # the evaluation instances' seed block (training draws its seeds from its own RNG)
DAGGER_SEED_BLOCK = 100   # DAgger round r plays the instances of seed block 100 + r (BC's demonstrations: seed + 1)
DAGGER_LABELS = "dagger_labels.jsonl.gz"   # in OUT: the screens DAgger's scripts labelled (a demonstrations file)
BC_DEMOS = "bc_demonstrations.jsonl.gz"     # in OUT: the scripted episodes' steps BC trained on (read again on --resume)


class _File(BaseModel):
    """The YAML file's schema (strict: wrong types and unknown keys are errors)."""
    model_config = ConfigDict(extra="forbid", strict=True)
    preset: str = "demo"
    seed: int = 0
    tasks: list[str] = Field(min_length=1)
    bc_episodes_per_task: int = Field(40, ge=1)
    updates: int = Field(40, ge=1)
    eval_episodes: int = Field(100, ge=1)
    eval_seed: int = Field(EVAL_SEED, ge=0)
    pages: int = Field(8, ge=1)
    spare_pages: int = Field(16, ge=0)
    phone: str = "iphone"
    judge: str = "page"
    methods: list[str] = Field(default_factory=lambda: list(METHODS), min_length=1)
    train: dict = Field(default_factory=dict)
    pointer: dict = Field(default_factory=dict)
    sft: dict = Field(default_factory=dict)
    dagger: dict = Field(default_factory=dict)
    demonstrations: str = ""


@dataclass
class MiniWoBConfig:
    preset: str = "demo"
    """Planner sizes and the base TrainConfig (``train`` overrides its fields)."""
    seed: int = 0
    tasks: list[str] = field(default_factory=list)
    """MiniWoB++ task pages (any of the installed package) or groups (``all``, ``ccnet``,
    ``table23``, ``scripted``; expanded by :meth:`validate`); one policy learns them all."""
    bc_episodes_per_task: int = 40
    """Scripted episodes per task that has a scripted solution (BC data)."""
    updates: int = 40
    """RL updates of BC + RL and of RL-only."""
    eval_episodes: int = 100
    """Fresh instances per task and method (the same instances for every method)."""
    eval_seed: int = EVAL_SEED
    """The evaluation instances' seed block (7: the reported tables'). Choose settings on another
    block (a validation block, e.g. 3) and report on 7, so no setting is chosen on the instances
    a table reports."""
    pages: int = 8
    """Browser pages side by side (collection, RL and evaluation: more rollouts queue)."""
    spare_pages: int = 16
    """Idle pages kept beyond ``pages`` (``PoolConfig.spare``), each showing the task it last
    ran: a rollout of a task that no page in flight shows starts on one of them with an
    in-place reset (~5 ms of browser CPU) instead of loading the task's page (~130 ms). A page
    idles at ~20 MB and almost no CPU."""
    phone: str = "iphone"
    """The screen every method sees (:data:`navrl.device.browser.PHONES` name or a bare
    ``WxH@scale`` screen: ``160x210@1`` is MiniWoB's own frame, as the anchors used)."""
    judge: str = "page"
    """The judges of every method's rollouts and evaluations: ``page`` (the page's reward; steps
    judged sparsely) or ``page-fields`` (dense: a step that puts a value the goal quotes into a
    text field succeeds, QWeb's potential; navrl.worlds.web.judges.FieldsStepJudge). The
    terminal verdict, and so every success rate, is the page's either way."""
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    train: dict = field(default_factory=dict)
    """TrainConfig overrides for the RL runs, by section (``{rollout: {tasks_per_update: 16},
    advantage: {estimator: gigpo}}``) or dotted name (``rollout.max_steps: 12``)."""
    pointer: dict = field(default_factory=dict)
    """Overrides of the preset's pointer-planner config (:class:`~navrl.agent.policy.pointer.config.PointerConfig`
    fields, e.g. ``{type_on_screen: true}``) for every method's planner."""
    demonstrations: str = ""
    """A file of BC's demonstrations (:mod:`navrl.rl.demo_file`; relative to the working directory):
    read where it exists — it must demonstrate the same tasks, seed, episodes per task and screen —
    else collected and written there. Runs that change only the planner (its inputs, sizes, BC
    settings) then share one collection, ~the whole of BC's time on MiniWoB++. Empty: collect, keep nothing."""
    sft: dict = field(default_factory=dict)
    """Overrides of the preset's BC settings (:class:`~navrl.rl.sft_config.SFTConfig` fields, e.g.
    ``{epochs: 40}``): a check on a few pages clones from far fewer demonstration steps than the
    all-task run, and at the preset's 10 epochs its planner is decided by its initialisation
    (docs/results/miniwob/drawn_things); more epochs give it as many optimiser steps."""
    dagger: dict = field(default_factory=dict)
    """DAgger after BC (:class:`~navrl.rl.sft_config.DAggerConfig` fields, e.g. ``{rounds: 1,
    episodes_per_task: 10}``): the BC planner plays fresh instances of the scripted tasks (seed
    blocks :data:`DAGGER_SEED_BLOCK` + round), their scripts label every screen it reaches, and BC
    trains on again over all demonstrations and labels. BC + RL starts from that planner."""

    def dagger_config(self):
        from navrl.rl.sft_config import DAggerConfig
        return _overridden("dagger", DAggerConfig(), self.dagger).validate()

    @staticmethod
    def load(path: str | Path) -> "MiniWoBConfig":
        f = load_config_file(path, _File)
        cfg = MiniWoBConfig(**f.model_dump())
        try:
            return cfg.validate()
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None

    def validate(self) -> "MiniWoBConfig":
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise ConfigError(f"unknown method {bad[0]!r}; choose from {', '.join(METHODS)}")
        # the suite's own judge sets, all ending on the page's reward (llm needs an endpoint the experiment does not take)
        judges = [j for j in get_suite("miniwob").judges if j != "llm"]
        if self.judge not in judges:
            raise ConfigError(f"judge must be one of {', '.join(judges)}, got {self.judge!r}")
        try:
            self.tasks = list(get_suite("miniwob").task_names(tuple(self.tasks)))   # groups expanded
            _miniwob_source(self.tasks, self.phone)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        from navrl.device.browser.app import check_phone
        try:
            check_phone(self.phone)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self.train_config()
        self.preset_used()
        d = self.dagger_config()
        if d.rounds and DAGGER_SEED_BLOCK <= self.eval_seed < DAGGER_SEED_BLOCK + d.rounds:
            raise ConfigError(f"eval_seed {self.eval_seed} is a DAgger round's seed block "
                              f"({DAGGER_SEED_BLOCK}..{DAGGER_SEED_BLOCK + d.rounds - 1}): it would train on the evaluation instances")
        return self

    def preset_used(self):
        """The preset with the ``pointer`` and ``sft`` overrides applied."""
        import dataclasses
        preset = get_preset(self.preset, {"run.seed": self.seed})
        return dataclasses.replace(preset, pointer=_overridden("pointer", preset.pointer, self.pointer),
                                   sft=_overridden("sft", preset.sft, self.sft).validate())

    def train_config(self) -> TrainConfig:
        base = get_preset(self.preset, {"run.seed": self.seed}).train
        try:
            cfg = base.override({"run.num_updates": self.updates, "run.eval_every": 0, "data.task_pool": 0})
            cfg = cfg.override(self.train)
        except (TypeError, ConfigError) as e:
            raise ConfigError(f"train: {e}") from None
        return cfg.validate()


def _overridden(section: str, base, over: dict):
    """``base`` (a config dataclass) with the fields ``over`` names replaced; an unknown field or a
    value of another type than the field's default (an int serves a float) is a ConfigError."""
    import dataclasses
    if not over:
        return base
    known = {f.name for f in dataclasses.fields(base)}
    bad = sorted(set(over) - known)
    if bad:
        raise ConfigError(f"{section}: unknown field {bad[0]!r}; choose from {', '.join(sorted(known))}")
    for k, v in over.items():
        want = type(getattr(base, k))
        if not (type(v) is want or (want is float and type(v) is int)):
            raise ConfigError(f"{section}: {k} must be {want.__name__}, got {type(v).__name__} {v!r}")
    return dataclasses.replace(base, **over)


def _dagger(cfg: MiniWoBConfig, bc, demos: list, scripted: list[str], judges, farm, sft, meta: dict, log,
            out: Path) -> list:
    """DAgger's rounds after BC (``cfg.dagger``): the labels gathered, ``bc`` trained on again
    over BC's ``demos`` and them (every round's record in ``meta["dagger"]``). The labels so far
    are written to ``out/``:data:`DAGGER_LABELS` after each round: a resumed run's PPO-ptx fits
    them as the stopped run's would have."""
    from navrl.rl.dagger import collect_corrections
    d = cfg.dagger_config()
    added: list = []
    labelled: list = []
    for r in range(d.rounds):
        t = time.perf_counter()
        tasks = get_suite("miniwob").tasks(len(scripted) * d.episodes_per_task, DAGGER_SEED_BLOCK + r,
                                           SuiteOptions(names=tuple(scripted), phone=cfg.phone))
        # one rolling run over the pages (the expert's share is drawn per task and step, not per batch)
        got = collect_corrections(bc, tasks, judges=judges, devices=farm, expert_share=d.expert_share,
                                  seed=cfg.seed + r)
        labels = [dm for _, dm in got.steps]
        rec = {k: getattr(got, k) for k in ("episodes", "successes", "masked", "unlabelled", "disagreements")}
        added += labels
        labelled += got.steps
        save_demonstrations(out / DAGGER_LABELS, labelled, {"tasks": scripted, "rounds": r + 1, "phone": cfg.phone,
                                                           "seed_block": DAGGER_SEED_BLOCK})
        res = train_sft(bc, demos + added, sft)
        rec.update(round=r + 1, labelled=len(labels), seconds=time.perf_counter() - t, train_seconds=res.seconds)
        meta.setdefault("dagger", []).append(rec)
        log(f"DAgger round {r + 1}: the BC planner finished {rec['successes']}/{rec['episodes']} episodes; "
            f"{len(labels)} screens labelled ({rec['disagreements']} it got wrong), {rec['unlabelled']} with no "
            f"scripted step, {rec['masked']} episodes masked; {rec['seconds'] / 60:.1f} min")
    return added


def _saved_labels(cfg: MiniWoBConfig, out: Path, scripted: list[str], log) -> list:
    """The DAgger labels a stopped run in ``out`` wrote (PPO-ptx fits them with BC's demonstrations);
    none when it ran no DAgger. A run that did but left no file (before they were saved) is said."""
    rounds = cfg.dagger_config().rounds
    if not rounds:
        return []
    path = out / DAGGER_LABELS
    if not path.is_file():
        log(f"  no {DAGGER_LABELS} in {out}: BC + RL's PPO-ptx fits BC's demonstrations without DAgger's labels")
        return []
    try:
        _, steps = load_demonstrations(path, expect={"tasks": scripted, "rounds": rounds, "phone": cfg.phone})
    except DemoFileError as e:
        raise ConfigError(f"--resume: {e}") from None
    log(f"  {len(steps)} DAgger labels from {path}")
    return [d for _, d in steps]


def _miniwob_source(names, phone: str):
    """The ``miniwob`` suite's task source over ``names`` (fresh instance seeds each draw)."""
    return get_suite("miniwob").source(SuiteOptions(names=tuple(names), phone=phone))


def _resumed(cfg: MiniWoBConfig, out: Path) -> dict:
    """What the stopped run in ``out`` measured (its ``results.json``), checked to be of ``cfg``:
    ConfigError when there is none or it ran another config (the first key that differs named)."""
    try:
        prior = json.loads((out / "results.json").read_text())
        ran = prior["config"]
        pending = list(prior["pending"])
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(f"--resume: {out} holds no results of a navrl experiment miniwob run") from None
    mine = json.loads(json.dumps(dict(cfg.__dict__), default=str))
    for k in sorted(set(mine) | set(ran)):
        if mine.get(k) != ran.get(k):
            raise ConfigError(f"--resume: {out} ran another config ({k}: {ran.get(k)!r}, not {mine.get(k)!r})")
    if not pending:
        raise ConfigError(f"--resume: {out} holds a finished run (nothing pending)")
    done = [m for m in cfg.methods if m not in pending]
    if "bc_rl" in pending and not (out / "bc" / "policy.pt").is_file():
        raise ConfigError(f"--resume: {out} has no bc/policy.pt for BC + RL to start from")
    return {"done": done, "prior": prior}


def run_miniwob(cfg: MiniWoBConfig, out: str | Path, command: str = "", log=print, resume: bool = False) -> Path:
    """Run the experiment into ``out``. ``resume``: continue the stopped run there (the same
    config): the methods it finished keep their rows and per-instance outcomes, its BC planner
    (``bc/policy.pt``) is not trained again nor are its demonstrations (``out/``:data:`BC_DEMOS`)
    collected again, the pending methods run."""
    from navrl.device.browser import BrowserBackend
    from navrl.device.ray_farm import make_device_factory
    from navrl.agent.planner import ExpertPlanner
    miniwob = get_suite("miniwob")
    out = Path(out)
    t0 = time.perf_counter()
    back = _resumed(cfg, out) if resume else None
    prov = provenance(cfg.seed, dict(cfg.__dict__))   # the checkout the run starts from (it may change while it runs)
    preset = cfg.preset_used()
    tcfg = cfg.train_config()
    judges = make_judges(cfg.judge)
    from navrl.device.pool import PoolConfig
    farm = make_device_factory(None, devices=cfg.pages,   # more rollouts than pages queue (the runner rolls them over)
                               pool=PoolConfig(spare=cfg.spare_pages),
                               # GiGPO's perceptual hashes read a screenshot per distinct UI tree (~1 step in
                               # 4): taken then, not with every observation
                               backend=BrowserBackend(screenshots="on_read" if tcfg.estimator_spec.needs_state_hashes
                                                      else "off"))
    rows: list[dict] = []
    outcomes: dict[tuple[str, str], dict[str, bool]] = {}
    meta: dict = {"throughput": {}, "phases": {}}
    done: list[str] = []
    if back is not None:
        prior, done = back["prior"], back["done"]
        rows = [r for r in prior["rows"] if r["method"] in done]
        outcomes = {(m, t): v for m in done for t, v in prior["outcomes"].get(m, {}).items()}
        meta.update({k: prior[k] for k in ("bc", "dagger", "phases") if k in prior},
                    throughput={m: v for m, v in prior.get("throughput", {}).items() if m in done},
                    resumed={"commit": prior.get("commit"), "minutes": prior.get("minutes", 0), "done": list(done)})
        for m in cfg.methods:      # a pending method's partial training (metrics.jsonl appends) starts over
            if m not in done and (out / m).is_dir() and m != "bc":
                shutil.rmtree(out / m)
        log(f"resuming {out}: {', '.join(LABELS[m] for m in done) or 'nothing'} measured at "
            f"{str(prior.get('commit'))[:7]}; to run: {', '.join(LABELS[m] for m in cfg.methods if m not in done)}")
    trained = back is not None and (out / "bc" / "policy.pt").is_file()   # the stopped run's BC planner

    @contextmanager
    def phase(name: str):
        """Minutes of a phase that ran to its end, kept in ``meta['phases']`` (a resumed run keeps
        its stopped run's, so the table says where an interrupted run's time went) and logged."""
        t = time.perf_counter()
        yield
        meta["phases"][name] = (time.perf_counter() - t) / 60
        log(f"  ({name}: {meta['phases'][name]:.1f} min)")
    try:
        # BC: the scripted solutions' successful episodes, fresh instances of their own
        scripted = [t for t in cfg.tasks if t in (miniwob.expert_names() or ())]
        bc = build_policy(preset, cfg.seed, "web")
        demos: list = []
        # RL only needs no demonstrations; a resumed run, only for BC + RL's PPO-ptx
        if scripted and (({"bc_rl"} if trained else {"bc", "bc_rl"}) - set(done)) & set(cfg.methods):
            demo_tasks = miniwob.tasks(len(scripted) * cfg.bc_episodes_per_task, cfg.seed + 1,
                                       SuiteOptions(names=tuple(scripted), phone=cfg.phone))
            header = {"tasks": scripted, "seed": cfg.seed + 1, "episodes_per_task": cfg.bc_episodes_per_task,
                      "phone": cfg.phone, "teacher": "template-compact"}
            path = Path(cfg.demonstrations) if cfg.demonstrations else None
            # a resumed run reads the demonstrations its stopped run collected (BC + RL's PPO-ptx
            # fits them) instead of playing the scripts again (half an hour over every task)
            own = out / BC_DEMOS
            if path is not None and path.exists():     # the config's file
                read = path
            elif back is not None and own.exists():     # the stopped run's
                read = own
            else:
                read = None
            if read is not None:
                try:
                    _, steps = load_demonstrations(read, expect=header)
                except DemoFileError as e:     # the config names a file of other demonstrations: bad input
                    raise ConfigError(f"demonstrations: {e}") from None
                log(f"BC: {len(steps)} demonstration steps of {len(scripted)} tasks from {read}")
            else:
                log(f"BC: {len(demo_tasks)} scripted episodes of {len(scripted)} tasks")
                with phase("demonstrations"):       # one rolling run over the pages, as the evaluation
                    steps = collect_demonstrations(bc, 0, TemplateTeacher(compact=True), tasks=demo_tasks,
                                                   expert=ExpertPlanner(), judges=judges, devices=farm,
                                                   with_task_ids=True)
                for p in (own, path):
                    if p is not None:
                        save_demonstrations(p, steps, {**header, "provenance": prov})
            demos = [d for _, d in steps]
            if trained:
                demos += _saved_labels(cfg, out, scripted, log)
            else:
                with phase("BC training"):
                    res = train_sft(bc, demos, preset.sft)
                meta["bc"] = {"tasks": scripted, "demonstration_steps": len(demos), "seconds": res.seconds}
                if cfg.dagger_config().rounds:
                    with phase("DAgger"):
                        demos += _dagger(cfg, bc, demos, scripted, judges, farm, preset.sft, meta, log, out)
        if not trained and "bc" not in done:   # (a resumed run past BC without its planner: RL only is left)
            save_policy(bc, out / "bc" / "policy.pt", {"stage": "bc", "tasks": scripted})

        def evaluate_all(method: str, policy) -> None:
            with phase(f"{LABELS[method]}'s evaluation"):
                per_task = {name: miniwob.tasks(cfg.eval_episodes, cfg.eval_seed,
                                                SuiteOptions(names=(name,), phone=cfg.phone)) for name in cfg.tasks}
                every = [t for ts in per_task.values() for t in ts]
                # one rolling run over every instance: a page freed by one episode takes the next (of
                # its own task first), where batches of one page each waited for their longest episode
                steps, t0 = [0], time.perf_counter()

                def progress(k: int) -> None:     # a line per 2,000 steps: the run is one call
                    steps[0] += k
                    if steps[0] % 2000 == 0:
                        log(f"  {LABELS[method]}: {steps[0]} steps of {len(every)} episodes, "
                            f"{(time.perf_counter() - t0) / 60:.1f} min")
                played = evaluate(greedy(policy), "miniwob", tasks=every, devices=farm, judges=tuple(judges[:3]),
                                  batch_size=max(1, len(every)), progress=progress).trajectories
                for name, ts in per_task.items():
                    ids = {t.id for t in ts}
                    r = summarize("miniwob", [tr for tr in played if tr.task.get("id") in ids])
                    outcomes[(method, name)] = r.successes_by_task()
                    d = r.to_dict()
                    rows.append({"method": method, "task": name, "n": r.n, "successes": r.successes,
                                 "success": d["success"], "ci_low": d["ci_low"], "ci_high": d["ci_high"],
                                 "masked": r.masked, "mean_length": d["mean_length"]})
                    log(f"  {LABELS[method]:8s} {name:22s} {r.summary().splitlines()[0]}")

        def rl(method: str, policy) -> None:
            log(f"{LABELS[method]}: {cfg.updates} updates of {tcfg.rollout.tasks_per_update} tasks x "
                f"{tcfg.rollout.rollouts_per_task} rollouts ({tcfg.advantage.estimator})")
            # PPO-ptx (the preset's ``policy.sft_coef``, 1.0 in ``demo``; ``train`` may change it)
            # keeps fitting the BC demonstrations: BC + RL only
            ptx = tcfg.policy.sft_coef if method == "bc_rl" and demos else 0.0
            tr = Trainer(policy, tcfg.override({"run.seed": cfg.seed, "policy.sft_coef": ptx}), out / method,
                         tasks=_miniwob_source(cfg.tasks, cfg.phone), judges=judges, devices=farm,
                         sft_demos=demos if ptx else None)
            t_rl, cpu0, browser0 = time.perf_counter(), time.process_time(), child_cpu_seconds()
            with phase(f"{LABELS[method]} training"):
                fit = tr.fit(cfg.updates, [ProgressCallback(lambda m: f"    update {m['update']}: success {m.get('success')}",
                                                            log=log),
                                           CheckpointCallback()])     # one checkpoint, at the end
            learner_cpu, browser1 = time.process_time() - cpu0, child_cpu_seconds()
            steps = sum(int(st.metrics.get("samples", 0)) for st in fit.history)
            tm = tr.runner.timings
            meta["throughput"][method] = {
                "env_steps": steps, "seconds": time.perf_counter() - t_rl,
                "env_steps_per_s": steps / max(1e-9, time.perf_counter() - t_rl),
                "rollout_share_browser": tm["device"] / max(1e-9, tm["total"]),
                "rollout_share_planner": tm["planner"] / max(1e-9, tm["total"]),
                "learner_cpu_s": learner_cpu,
                "browser_cpu_s": None if browser0 is None or browser1 is None else max(0.0, browser1 - browser0)}
            evaluate_all(method, tr.policy)

        def outputs(done: list[str]) -> None:
            """The tables of the methods measured so far: a run stopped in a later method (the
            all-task run takes ~2.5 h) keeps what it measured, marked partial."""
            meta.update(minutes=(time.perf_counter() - t0) / 60 + meta.get("resumed", {}).get("minutes", 0),
                        **prov, command=command,
                        config=dict(cfg.__dict__), pending=[m for m in cfg.methods if m not in done])
            write_outputs(cfg, rows, outcomes, meta, out)

        if "bc" in cfg.methods and "bc" not in done:
            log("BC only")
            evaluate_all("bc", load_policy(out / "bc" / "policy.pt"))
            done.append("bc")
            outputs(done)
        if "bc_rl" in cfg.methods and "bc_rl" not in done:
            rl("bc_rl", load_policy(out / "bc" / "policy.pt"))
            done.append("bc_rl")
            outputs(done)
        if "rl" in cfg.methods and "rl" not in done:
            rl("rl", build_policy(preset, cfg.seed, "web"))
            done.append("rl")
    finally:
        farm.close()
    outputs(done)
    return out / "results.md"


# ------------------------------------------------------------------------------ outputs
def load_anchors(path: Path = ANCHORS) -> dict[str, dict[str, float]]:
    """Published per-task success of the anchor papers (empty cells left out)."""
    if not path.exists():
        return {}
    out: dict[str, dict[str, float]] = {}
    for r in csv.DictReader(path.read_text(encoding="utf-8").splitlines()):
        out[r["task"]] = {k: float(v) for k, v in r.items() if k != "task" and v not in ("", None)}
    return out


def write_outputs(cfg: MiniWoBConfig, rows: list[dict], outcomes: dict, meta: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    atomic_write_text(out / "results.csv", buf.getvalue())
    comps = _comparisons(cfg, outcomes)
    # every evaluation instance's outcome, so another run on the same instances compares paired
    per_instance = {m: {t: v for (m2, t), v in outcomes.items() if m2 == m} for m in cfg.methods}
    atomic_write_text(out / "results.json", json.dumps({**meta, "rows": rows, "comparisons": comps,
                                                        "outcomes": per_instance}, indent=2, default=str))
    anchors = load_anchors()
    atomic_write_text(out / "anchors.csv", anchors_csv(cfg.tasks, anchors))
    atomic_write_text(out / "results.md", results_markdown(cfg, rows, comps, meta, anchors))
    _curves(cfg, out)


def anchor_columns(tasks, anchors: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    """(column, label) of :data:`ANCHOR_COLUMNS` that have a value for at least one of ``tasks``."""
    return [(k, lab) for k, lab in ANCHOR_COLUMNS if any(k in anchors.get(t, {}) for t in tasks)]


def anchors_csv(tasks, anchors: dict[str, dict[str, float]]) -> str:
    """The published anchors of ``tasks`` as CSV (``task`` and the columns with a value; empty = none)."""
    cols = [k for k, _ in anchor_columns(tasks, anchors)]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task", *cols])
    for t in tasks:
        a = anchors.get(t, {})
        w.writerow([t, *(f"{a[k]:.2f}" if k in a else "" for k in cols)])
    return buf.getvalue()


def _comparisons(cfg: MiniWoBConfig, outcomes: dict) -> list[dict]:
    """BC + RL vs BC only and RL only vs BC only over all tasks' instances (paired by instance)."""
    res = []
    for a, b in (("bc_rl", "bc"), ("rl", "bc")):
        x = {f"{t}/{k}": v for t in cfg.tasks for k, v in outcomes.get((a, t), {}).items()}
        y = {f"{t}/{k}": v for t in cfg.tasks for k, v in outcomes.get((b, t), {}).items()}
        if not x or not y:
            continue
        n11, n10, n01, n00 = paired_counts(x, y)
        n = n11 + n10 + n01 + n00
        lo, hi = paired_difference_interval(n11, n10, n01, n00)
        res.append({"method": a, "vs": b, "instances": n, "difference": (n10 - n01) / n if n else None,
                    "ci_low": lo, "ci_high": hi})
    return res


def results_markdown(cfg: MiniWoBConfig, rows: list[dict], comps: list[dict], meta: dict,
                     anchors: dict[str, dict[str, float]]) -> str:
    idx = {(r["method"], r["task"]): r for r in rows}
    cols = anchor_columns(cfg.tasks, anchors)
    methods = [m for m in METHODS if m in cfg.methods]
    lines = ["# MiniWoB++: navrl's pointer planner, BC only vs BC + RL vs RL only", "",
             f"- command: `{meta.get('command') or 'navrl experiment miniwob'}`",
             f"- commit: `{meta.get('commit')}`",
             f"- preset `{cfg.preset}`, seed {cfg.seed}, {len(cfg.tasks)} tasks, one multi-task policy; BC from "
             f"{cfg.bc_episodes_per_task} scripted episodes per scripted task; {cfg.updates} RL updates; "
             f"{cfg.eval_episodes} fresh instances per task and method (seed block {cfg.eval_seed}); screen `{cfg.phone}`; "
             f"{cfg.pages} browser pages; {meta.get('minutes', 0):.0f} min",
             *(["- minutes by phase: " + ", ".join(f"{k} {v:.0f}" for k, v in meta["phases"].items())]
               if meta.get("phases") else []),
             *([f"- resumed: {', '.join(LABELS[m] for m in meta['resumed']['done']) or 'nothing'} measured by the "
                f"stopped run at `{meta['resumed']['commit']}` (its BC planner kept); the minutes are both runs'"]
               if meta.get("resumed") else []),
             *([f"- **partial**: written after {', '.join(LABELS[m] for m in cfg.methods if m not in meta['pending'])}; "
                f"not measured (the run stopped or is still running): {', '.join(LABELS[m] for m in meta['pending'])}"]
               if meta.get("pending") else []),
             f"- judges `{cfg.judge}`; RL overrides {json.dumps(cfg.train, sort_keys=True) if cfg.train else 'none'}; "
             f"planner overrides {json.dumps(cfg.pointer, sort_keys=True) if cfg.pointer else 'none'}"
             + (f"; BC overrides {json.dumps(cfg.sft, sort_keys=True)}" if cfg.sft else ""),
             *[f"- DAgger round {d['round']}: the BC planner finished {d['successes']}/{d['episodes']} episodes "
               f"of the scripted tasks; {d['labelled']} screens labelled by the scripts ({d['disagreements']} where "
               f"its step differed), {d['unlabelled']} with no scripted step; {d['seconds'] / 60:.0f} min"
               for d in meta.get("dagger", [])], "",
             "Success in % with the 95% Wilson interval; anchors are the papers' published per-task success "
             "(sources: `src/navrl/experiments/configs/miniwob_anchors.md`; blank: not published for that task).",
             "",
             "| " + " | ".join(["task", *(LABELS[m] for m in methods), *(c for _, c in cols)]) + " |",
             "|" + "---|" * (1 + len(methods) + len(cols))]
    for t in cfg.tasks:
        cells = []
        for m in methods:
            r = idx.get((m, t))
            cells.append("-" if not r or r["success"] is None else
                         f"{100 * r['success']:.0f} [{100 * r['ci_low']:.0f}-{100 * r['ci_high']:.0f}]")
        a = anchors.get(t, {})
        cells += [f"{100 * a[k]:.0f}" if k in a else "" for k, _ in cols]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    means = []
    for m in methods:
        vals = [idx[(m, t)]["success"] for t in cfg.tasks if (m, t) in idx and idx[(m, t)]["success"] is not None]
        means.append(f"**{100 * sum(vals) / len(vals):.1f}**" if vals else "-")
    amean = []
    for k, _ in cols:
        vals = [anchors[t][k] for t in cfg.tasks if k in anchors.get(t, {})]
        amean.append(f"{100 * sum(vals) / len(vals):.1f} ({len(vals)} tasks)" if vals else "")
    lines.append("| " + " | ".join(["**mean**", *means, *amean]) + " |")
    if comps:
        lines += ["", "Paired differences over all evaluation instances (Newcombe's paired 95% interval):", ""]
        for c in comps:
            lines.append(f"- {LABELS[c['method']]} - {LABELS[c['vs']]}: {100 * c['difference']:+.1f} points "
                         f"({100 * c['ci_low']:+.1f} to {100 * c['ci_high']:+.1f}, {c['instances']} instances)")
    if meta.get("throughput"):
        lines += ["", "Throughput during RL (all pages together):", ""]
        for m, tp in meta["throughput"].items():
            lines.append(f"- {LABELS[m]}: {tp['env_steps_per_s']:.1f} environment steps/s; rollout time in the "
                         f"browser {100 * tp['rollout_share_browser']:.0f}%, in the planner "
                         f"{100 * tp['rollout_share_planner']:.0f}%" + (
                             f"; CPU: browser {tp['browser_cpu_s']:.0f} core-s "
                             f"({100 * tp['browser_cpu_s'] / max(1e-9, tp['browser_cpu_s'] + tp['learner_cpu_s']):.0f}%), "
                             f"learner (planner, update) {tp['learner_cpu_s']:.0f} core-s"
                             if tp.get("browser_cpu_s") is not None else ""))
    lines += ["", "![training success per update](curves.png)", ""]
    return "\n".join(lines) + "\n"


def _curves(cfg: MiniWoBConfig, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in ("bc_rl", "rl"):
        f = out / m / "metrics.jsonl"
        if not f.exists():
            continue
        pts = [(r["update"], r["success"]) for r in map(json.loads, f.read_text().splitlines())
               if r.get("kind") == "update" and r.get("success") is not None]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, [100 * y for y in ys], marker="o", label=LABELS[m])
    ax.set_xlabel("update")
    ax.set_ylabel("training success (%)")
    ax.grid(alpha=0.3)
    if ax.get_lines():
        ax.legend()
    fig.tight_layout()
    b = io.BytesIO()
    fig.savefig(b, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(out / "curves.png", b.getvalue())


__all__ = ["ANCHOR_COLUMNS", "MiniWoBConfig", "anchors_csv", "load_anchors", "run_miniwob"]
