"""Compare irqlab's response-time bounds with MAST's (issue 35).

MAST (Modeling and Analysis Suite for Real-Time Applications, Universidad
de Cantabria) is the outside anchor: on one-CPU systems MAST can express,
irqlab's bound for each task should never be above MAST's ``classic_rm``
bound, and equal on plain fixed-priority tasks. This tool translates irqlab
models (YAML, docs/model.md) into MAST's text model, runs MAST's
``mast_analysis`` and ``irqlab analyze --json`` on the same system and
prints one JSON line per task, then a summary line. docs/mast.md describes
the mapping, what cannot be expressed and the figures measured.

MAST is not part of irqlab: point ``MAST_ANALYSIS`` at an already-built
``mast_analysis`` binary. Without it the tool says so and exits 3.

    MAST_ANALYSIS=/path/to/mast_analysis python bench/mast_compare.py compare M.yaml...
    python bench/mast_compare.py generate --shape ss --count 50 --seed 1 --out DIR
    MAST_ANALYSIS=... python bench/mast_compare.py run --shape fp --count 50 --seed 1
    MAST_ANALYSIS=... python bench/mast_compare.py sanity

Output lines (JSON): per task ``{"model", "task", "group", "mast", "irqlab",
"ratio", ...}`` (times in integer ns, ``null`` when there is no bound), per
model that is skipped ``{"model", "skipped": REASON}``, and last
``{"summary": ...}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from irqlab.model import load as load_model
from irqlab.model import parse_duration

HERE = Path(__file__).resolve().parent
SANITY_DIR = HERE / "mast"

# MAST priorities: tasks 2.. (1 is every sporadic server's background
# priority, below every used priority as MAST requires), interrupts at the top.
MAST_MIN_PRIORITY = 1
MAST_MAX_PRIORITY = 30000
MAST_MIN_INTERRUPT_PRIORITY = 30001
MAST_MAX_INTERRUPT_PRIORITY = 32767
# mast_analysis' default stop factor: it stops iterating at 100 x the deadline.
STOP_FACTOR = 100
# MAST's Large_Time (no bound) prints as 1.000E+100.
MAST_UNBOUNDED = 1e99


class Skip(Exception):
    """The model has something MAST cannot express; the message says what."""


class ToolMissing(Exception):
    """mast_analysis or irqlab is not available."""


# ---------------------------------------------------------------- the model


def ns(v: Any) -> int:
    """A model duration (text with a unit, or "0") in integer ns."""
    if v is None or str(v).strip() in ("0", "0.0"):
        return 0
    return int(parse_duration(str(v)))


def compute_of(program: Sequence[Any], where: str) -> int:
    """Total compute of a program made of compute steps and counted loops;
    anything else (read, write, sleep, bind, forever) cannot be expressed."""
    total = 0
    for k, step in enumerate(program):
        if not isinstance(step, dict) or len(step) != 1:
            raise Skip(f"{where}[{k}]: not a one-key step")
        (key, val), = step.items()
        if key == "compute":
            total += ns(val)
        elif key == "loop":
            count = val.get("count")
            if count is None:
                raise Skip(f"{where}[{k}]: a loop without a count")
            total += int(count) * compute_of(val.get("do", []), f"{where}[{k}].loop.do")
        elif key in ("read", "write"):
            raise Skip(f"{where}[{k}]: a {key} (the task suspends on I/O; MAST's "
                       "classic_rm has no self-suspending tasks, and the read's "
                       "bottom half runs on irqlab's interrupt path)")
        elif key == "sleep":
            raise Skip(f"{where}[{k}]: a sleep (self-suspension)")
        else:
            raise Skip(f"{where}[{k}]: a {key} step")
    return total


@dataclass
class MTask:
    """One irqlab task as a MAST transaction."""

    name: str            # irqlab name
    ident: str           # MAST identifier
    vcpu: str
    policy: str          # "fifo" or "sporadic"
    wcet: int
    period: int
    deadline: int
    jitter: int = 0
    priority: int = 0    # MAST priority
    budget: int = 0      # sporadic: initial capacity
    repl_period: int = 0
    max_repl: int = 1
    server_tasks: int = 1

    def group(self) -> str:
        if self.policy == "fifo":
            return "fp"
        return "ss-covers" if self.budget >= self.wcet else "ss-short"

    def mast_case(self) -> str | None:
        """Which of MAST's sporadic-server cases applies (Mast.Linear_Translation)."""
        if self.policy != "sporadic":
            return None
        css, tss, c, t = self.budget, self.repl_period, self.wcet, self.period
        if css * t < c * tss:
            return "no capacity (Css/Tss < C/T): unbounded"
        if tss > t:
            return "1 (Tss > T): + Tss - Css"
        if css >= c:
            return "2.1 (Tss <= T, Css >= C): no delay"
        return "2.2 (Tss <= T, Css < C): + (ceil(C/Css) - 1) Tss + Tss - Css"


@dataclass
class MIrq:
    """One interrupt source as a MAST interrupt task."""

    name: str
    ident: str
    wcet: int
    period: int
    jitter: int
    sporadic: bool
    priority: int = 0


@dataclass
class Translation:
    path: str
    tasks: list[MTask] = field(default_factory=list)
    irqs: list[MIrq] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        return mast_text(self)


def translate(model: dict[str, Any]) -> Translation:
    """irqlab model (the filled-in dict of ``irqlab.model.load``) -> MAST."""
    m = model.get("machine") or {}
    path = m.get("path", "quest")
    if path == "hypervisor" or model.get("vms"):
        raise Skip("a hypervisor machine (VINT's two-level scheduling, vINT)")
    if int(m.get("cpus", 1)) != 1:
        raise Skip(f"machine.cpus = {m.get('cpus')}: the comparison covers one CPU")
    if model.get("costs"):
        raise Skip("a costs: section (measured costs the simulator charges)")
    if model.get("xhci"):
        raise Skip("an xHCI controller (interrupters, USB transfers)")
    if model.get("bindings"):
        raise Skip("bindings (file descriptors bound to I/O classes)")
    linux = m.get("linux") or {}
    if path == "linux" and linux.get("threaded_bh"):
        raise Skip("machine.linux.threaded_bh: bottom halves in ksoftirqd")
    tr = Translation(path=path)
    vcpus = {v["name"]: v for v in model.get("vcpus") or []}
    for v in vcpus.values():
        where = f"vcpus[{v['name']}]"
        if v.get("kind") == "io" or v.get("policy") == "pibs":
            raise Skip(f"{where}: a PIBS I/O VCPU (priority-inheriting bandwidth-preserving "
                       "server, QUEST-VCPU): MAST has no such server")
        pol = v.get("policy")
        if pol not in ("fifo", "sporadic"):
            raise Skip(f"{where}: policy {pol}: MAST has no {pol} server of irqlab's "
                       "semantics (only fixed priorities and POSIX sporadic servers map)")
        if pol == "sporadic" and v.get("background"):
            raise Skip(f"{where}: a sporadic server in background mode")
    # the servers' fixed-priority order, as irqlab-core's PriorityKey: an
    # explicit priority p is rank 100 - p, else rate-monotonic (period in ns);
    # ties by declaration order
    order = {name: i for i, name in enumerate(vcpus)}

    def vkey(v: dict[str, Any]) -> tuple[int, int]:
        if v.get("priority") is not None:
            return (100 - int(v["priority"]), order[v["name"]])
        return (ns(v["period"]), order[v["name"]])

    tasks = model.get("tasks") or []
    per_vcpu: dict[str, int] = {}
    for t in tasks:
        per_vcpu[t["vcpu"]] = per_vcpu.get(t["vcpu"], 0) + 1
    for i, t in enumerate(tasks):
        where = f"tasks[{t['name']}]"
        if t.get("period") is None:
            raise Skip(f"{where}: released once (no period)")
        if t.get("abort_on_miss"):
            raise Skip(f"{where}: abort_on_miss")
        v = vcpus[t["vcpu"]]
        c = compute_of(t.get("program") or [], f"{where}.program")
        if c <= 0:
            raise Skip(f"{where}: no compute")
        period = ns(t["period"])
        mt = MTask(name=t["name"], ident=f"t{i}", vcpu=v["name"], policy=v["policy"],
                   wcet=c, period=period,
                   deadline=ns(t["deadline"]) if t.get("deadline") is not None else period,
                   server_tasks=per_vcpu[v["name"]])
        if v["policy"] == "sporadic":
            if per_vcpu[v["name"]] > 1:
                raise Skip(f"vcpus[{v['name']}]: {per_vcpu[v['name']]} tasks in one sporadic "
                           "server (MAST's analysis gives each activity the server's whole "
                           "capacity)")
            mt.budget = ns(v["budget"])
            mt.repl_period = ns(v["period"])
            mt.max_repl = int(v.get("max_repl") or 32)
        tr.tasks.append(mt)
    # MAST priorities: by server order, then task priority (higher first);
    # equal task priorities in one server get one MAST priority
    keyed = sorted(((vkey(vcpus[mt.vcpu]), -int(tasks[i].get("priority") or 1), i)
                    for i, mt in enumerate(tr.tasks)), reverse=True)
    prio = MAST_MIN_PRIORITY
    last: tuple[Any, ...] | None = None
    for k0, k1, i in keyed:
        if (k0, k1) != last:
            prio += 1
            last = (k0, k1)
        tr.tasks[i].priority = prio
    if prio > MAST_MAX_PRIORITY:
        raise Skip("more priority levels than the MAST model allows")
    # interrupt sources
    classes = {c["name"]: c for c in model.get("classes") or []}
    for k, d in enumerate(model.get("devices") or []):
        where = f"devices[{d['name']}]"
        if d.get("upcall"):
            raise Skip(f"{where}: an upcall (its handler runs in a server of its own)")
        kind = d.get("kind")
        if kind == "generic":
            top, bottom = ns(d.get("isr")), ns(d.get("dsr"))
            period = ns(d.get("min_interarrival"))
            count, jitter, sporadic = 1, 0, True
        elif kind == "nic" and path == "linux":
            top, bottom = ns(d.get("top_half")), ns(d.get("bottom_half"))
            a = d.get("arrival") or {}
            ak = a.get("kind")
            if ak in ("periodic", "flood"):
                count, period, jitter, sporadic = 1, ns(a.get("interval")), 0, ak == "flood"
            elif ak == "burst":
                count, period = int(a["count"]), ns(a.get("every"))
                jitter, sporadic = (count - 1) * ns(a.get("gap")), False
            else:
                raise Skip(f"{where}: NIC arrivals of kind {ak} (no periodic bound MAST "
                           "takes)")
        else:
            raise Skip(f"{where}: a {kind} device on path {path} (requests, or a bottom "
                       "half on irqlab's interrupt path that MAST cannot place)")
        if period <= 0:
            raise Skip(f"{where}: a zero inter-arrival time")
        if path == "linux":
            wcet = top + bottom
        elif bottom == 0:
            wcet = top
        elif path == "quest":
            raise Skip(f"{where}: a bottom half on the class's PIBS I/O VCPU")
        else:
            cls = classes.get(d.get("class") or "")
            raise Skip(f"{where}: a bottom half charged to the consumer "
                       f"{cls.get('consumer') if cls else '?'}'s Main VCPU budget (MAST "
                       "cannot charge one activity to another's server)")
        if wcet <= 0:
            continue
        tr.irqs.append(MIrq(name=d["name"], ident=f"i{k}", wcet=count * wcet,
                            period=period, jitter=jitter, sporadic=sporadic,
                            priority=MAST_MAX_INTERRUPT_PRIORITY - k))
    if path != "linux" and tr.irqs and any(t.policy == "sporadic" for t in tr.tasks):
        tr.notes.append("top halves are charged to the running server's budget in irqlab "
                        "(Quest), not in MAST")
    return tr


# --------------------------------------------------------------- MAST model


def mast_text(tr: Translation) -> str:
    """MAST's text model (MAST 1.x format; times in ns)."""
    out: list[str] = []
    w = out.append
    w(f"""Processing_Resource (
   Type                   => Regular_Processor,
   Name                   => cpu0,
   Max_Interrupt_Priority => {MAST_MAX_INTERRUPT_PRIORITY},
   Min_Interrupt_Priority => {MAST_MIN_INTERRUPT_PRIORITY},
   Worst_ISR_Switch       => 0.0,
   Avg_ISR_Switch         => 0.0,
   Best_ISR_Switch        => 0.0,
   Speed_Factor           => 1.0);

Scheduler (
   Type   => Primary_Scheduler,
   Name   => sched0,
   Host   => cpu0,
   Policy =>
      ( Type                 => Fixed_Priority,
        Worst_Context_Switch => 0.0,
        Avg_Context_Switch   => 0.0,
        Best_Context_Switch  => 0.0,
        Max_Priority         => {MAST_MAX_PRIORITY},
        Min_Priority         => {MAST_MIN_PRIORITY}));
""")
    for q in tr.irqs:
        w(f"""
Scheduling_Server (
   Type                    => Regular,
   Name                    => s_{q.ident},
   Server_Sched_Parameters =>
      ( Type         => Interrupt_FP_Policy,
        The_Priority => {q.priority},
        Preassigned  => YES),
   Scheduler               => sched0);

Operation (
   Type                      => Simple,
   Name                      => o_{q.ident},
   Worst_Case_Execution_Time => {q.wcet}.0,
   Avg_Case_Execution_Time   => {q.wcet}.0,
   Best_Case_Execution_Time  => {q.wcet}.0);
""")
        if q.sporadic and q.jitter == 0:
            ev = (f"( Type => Sporadic, Name => e_{q.ident}, Avg_Interarrival => "
                  f"{q.period}.0, Distribution => UNIFORM, Min_Interarrival => {q.period}.0)")
        else:
            ev = (f"( Type => Periodic, Name => e_{q.ident}, Period => {q.period}.0, "
                  f"Max_Jitter => {q.jitter}.0, Phase => 0.0)")
        w(f"""
Transaction (
   Type            => Regular,
   Name            => x_{q.ident},
   External_Events => ( {ev} ),
   Internal_Events => ( ( Type => Regular, Name => d_{q.ident}) ),
   Event_Handlers  =>
      ( ( Type               => Activity,
          Input_Event        => e_{q.ident},
          Output_Event       => d_{q.ident},
          Activity_Operation => o_{q.ident},
          Activity_Server    => s_{q.ident})));
""")
    for t in tr.tasks:
        if t.policy == "sporadic":
            sp = f"""( Type                       => Sporadic_Server_Policy,
        Normal_Priority            => {t.priority},
        Background_Priority        => {MAST_MIN_PRIORITY},
        Initial_Capacity           => {t.budget}.0,
        Replenishment_Period       => {t.repl_period}.0,
        Max_Pending_Replenishments => {t.max_repl},
        Preassigned                => YES)"""
        else:
            sp = f"""( Type         => Fixed_Priority_Policy,
        The_Priority => {t.priority},
        Preassigned  => YES)"""
        w(f"""
Scheduling_Server (
   Type                    => Regular,
   Name                    => s_{t.ident},
   Server_Sched_Parameters =>
      {sp},
   Scheduler               => sched0);

Operation (
   Type                      => Simple,
   Name                      => o_{t.ident},
   Worst_Case_Execution_Time => {t.wcet}.0,
   Avg_Case_Execution_Time   => {t.wcet}.0,
   Best_Case_Execution_Time  => {t.wcet}.0);

Transaction (
   Type            => Regular,
   Name            => x_{t.ident},
   External_Events =>
      ( ( Type => Periodic, Name => e_{t.ident}, Period => {t.period}.0,
          Max_Jitter => {t.jitter}.0, Phase => 0.0) ),
   Internal_Events =>
      ( ( Type => Regular, Name => d_{t.ident},
          Timing_Requirements =>
            ( Type             => Hard_Global_Deadline,
              Deadline         => {t.deadline}.0,
              Referenced_Event => e_{t.ident})) ),
   Event_Handlers  =>
      ( ( Type               => Activity,
          Input_Event        => e_{t.ident},
          Output_Event       => d_{t.ident},
          Activity_Operation => o_{t.ident},
          Activity_Server    => s_{t.ident})));
""")
    return "".join(out)


def mast_binary() -> str:
    p = os.environ.get("MAST_ANALYSIS")
    if not p:
        raise ToolMissing("MAST_ANALYSIS is not set: point it at an already-built MAST "
                          "mast_analysis binary (MAST is not part of irqlab; see docs/mast.md)")
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        raise ToolMissing(f"MAST_ANALYSIS={p}: no executable there")
    return p


_RESULT = re.compile(
    r"Transaction\s*\(\s*Name\s*=>\s*(\w+)\s*,.*?Worst_Global_Response_Times\s*=>\s*"
    r"\(\s*\(\s*Referenced_Event\s*=>\s*\w+\s*,\s*Time_Value\s*=>\s*([-+0-9.Ee]+)",
    re.S | re.I)


def parse_mast_results(text: str) -> dict[str, float | None]:
    """Worst global response time of each transaction (None: unbounded)."""
    out: dict[str, float | None] = {}
    for name, val in _RESULT.findall(text):
        v = float(val)
        out[name.lower()] = None if v >= MAST_UNBOUNDED else v
    return out


def run_mast(text: str, tool: str, keep: Path | None = None,
             stem: str = "model") -> tuple[dict[str, float | None], str]:
    """Run ``mast_analysis TOOL`` on a model text; (results, final status)."""
    exe = mast_binary()
    with tempfile.TemporaryDirectory(prefix="mast_compare_") as d:
        wd = Path(d)
        (wd / "model.txt").write_text(text)
        p = subprocess.run([exe, tool, "model.txt", "results.txt"], cwd=wd,
                           capture_output=True, text=True, timeout=300)
        status = "?"
        for line in p.stdout.splitlines():
            if line.startswith("Final analysis status:"):
                status = line.split(":", 1)[1].strip()
        res = wd / "results.txt"
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{stem}.mast.txt").write_text(text)
            if res.exists():
                shutil.copy(res, keep / f"{stem}.{tool}.results.txt")
        if not res.exists():
            lis = wd / "mast_parser.lis"
            msg = lis.read_text()[-2000:] if lis.exists() else p.stdout[-2000:] + p.stderr
            raise RuntimeError(f"mast_analysis {tool} wrote no results (status {status}): "
                               f"{msg.strip()}")
        return parse_mast_results(res.read_text()), status


# ------------------------------------------------------------------ irqlab


def irqlab_binary(explicit: str | None) -> str:
    if explicit:
        return explicit
    env = os.environ.get("IRQLAB")
    if env:
        return env
    sib = Path(sys.executable).parent / "irqlab"
    if sib.exists():
        return str(sib)
    w = shutil.which("irqlab")
    if w:
        return w
    raise ToolMissing("no irqlab CLI: set IRQLAB or run with the project's venv python")


_NUM_NOTE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(ns|us|ms|s)\b")


def irqlab_tasks(exe: str, model_path: Path) -> dict[str, dict[str, Any]]:
    """``irqlab analyze --json`` -> {task: row of model.tasks}."""
    with tempfile.TemporaryDirectory(prefix="mast_compare_irq_") as d:
        out = Path(d) / "a.json"
        p = subprocess.run([exe, "analyze", str(model_path), "--json", str(out)],
                           capture_output=True, text=True, timeout=600)
        if p.returncode not in (0, 1) or not out.exists():
            raise RuntimeError(f"irqlab analyze {model_path}: exit {p.returncode}: "
                               f"{(p.stderr or p.stdout).strip()[-1000:]}")
        data = json.loads(out.read_text())
    return {t["name"]: t for t in (data.get("model") or {}).get("tasks") or []}


def relaxed_copy(raw: dict[str, Any], factor: int) -> dict[str, Any]:
    """The model with every task's deadline multiplied by ``factor`` (the
    bound does not depend on the deadline; the analysis only stops at it)."""
    r = json.loads(json.dumps(raw))
    for t in r.get("tasks") or []:
        if t.get("period") is None:
            continue
        d = ns(t.get("deadline") if t.get("deadline") is not None else t["period"])
        t["deadline"] = f"{d * factor}ns"
    return r


def irqlab_bounds(exe: str, model_path: Path, raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per task: ``bound`` (ns or None), ``within`` (bounded within its
    deadline), ``source`` ("response", or "relaxed": from a run with every
    deadline x100, for a bound that passed the deadline) and ``note``."""
    rows = irqlab_tasks(exe, model_path)
    out: dict[str, dict[str, Any]] = {}
    need_relaxed = False
    for name, r in rows.items():
        b = r.get("response")
        out[name] = {"bound": int(b) if b is not None else None,
                     "within": bool(r.get("schedulable")), "source": "response",
                     "note": r.get("note")}
        if b is None:
            need_relaxed = True
    if need_relaxed:
        with tempfile.TemporaryDirectory(prefix="mast_compare_rel_") as d:
            rp = Path(d) / model_path.name
            rp.write_text(yaml.safe_dump(relaxed_copy(raw, STOP_FACTOR), sort_keys=False))
            rel = irqlab_tasks(exe, rp)
        for name, o in out.items():
            if o["bound"] is None and name in rel and rel[name].get("response") is not None:
                o["bound"] = int(rel[name]["response"])
                o["source"] = "relaxed"
    return out


# --------------------------------------------------------------- simulator


def simulated_max(loaded: Any, duration_ns: int, seeds: Sequence[int]) -> dict[str, int]:
    """The largest simulated response of each task over a few seeds (every
    task and interrupt source starts at 0 unless the model says otherwise:
    the synchronous release), not a worst case but a floor under it."""
    out: dict[str, int] = {}
    for seed in seeds:
        r = loaded.simulate(seed=seed, duration_ns=duration_ns)
        for t in r.tasks:
            mx = (t.get("response") or {}).get("max_ns")
            if mx is not None:
                out[t["name"]] = max(out.get(t["name"], 0), int(mx))
    return out


# ------------------------------------------------------------------ compare


def compare_model(path: Path, tools: Sequence[str], irqlab_exe: str,
                  keep: Path | None, sim_ns: int = 0) -> Iterable[dict[str, Any]]:
    raw = yaml.safe_load(path.read_text())
    loaded = load_model(path)
    try:
        tr = translate(loaded.model)
    except Skip as e:
        yield {"model": str(path), "skipped": str(e)}
        return
    text = tr.text()
    mast: dict[str, dict[str, float | None]] = {}
    status: dict[str, str] = {}
    for tool in tools:
        mast[tool], status[tool] = run_mast(text, tool, keep, path.stem)
    irq = irqlab_bounds(irqlab_exe, path, raw)
    sim = simulated_max(loaded, sim_ns, (1, 2, 3)) if sim_ns > 0 else {}
    main_tool = tools[0]
    for t in tr.tasks:
        x = f"x_{t.ident}"
        mv = mast[main_tool].get(x)
        m_ns = None if mv is None else int(round(mv))
        i = irq.get(t.name, {"bound": None, "within": False, "source": None, "note": "absent"})
        ib = i["bound"]
        ratio = (ib / m_ns) if (ib is not None and m_ns) else None
        row: dict[str, Any] = {
            "model": str(path), "task": t.name, "group": t.group(), "path": tr.path,
            "wcet": t.wcet, "period": t.period, "deadline": t.deadline,
            "mast": m_ns, "irqlab": ib,
            "ratio": None if ratio is None else round(ratio, 4),
            "irqlab_above_mast": (ib is None and m_ns is not None)
            or (ib is not None and m_ns is not None and ib > m_ns),
            "irqlab_within_deadline": i["within"], "irqlab_source": i["source"],
            "mast_within_deadline": m_ns is not None and m_ns <= t.deadline,
            "interrupts": len(tr.irqs),
        }
        if t.policy == "sporadic":
            row["server"] = {"budget": t.budget, "period": t.repl_period,
                             "mast_case": t.mast_case()}
        for tool in tools[1:]:
            v = mast[tool].get(x)
            row[f"mast_{tool}"] = None if v is None else int(round(v))
        if sim_ns > 0:
            sm = sim.get(t.name)
            row["sim_max"] = sm
            row["sim_above_mast"] = sm is not None and (m_ns is None or sm > m_ns)
            row["sim_above_irqlab"] = sm is not None and ib is not None and sm > ib
        if i["bound"] is None or not i["within"]:
            row["irqlab_note"] = i["note"]
        if tr.notes:
            row["notes"] = tr.notes
        yield row


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    tasks = [r for r in rows if "task" in r]

    def stats(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        ratios = [r["ratio"] for r in rs if r["ratio"] is not None]
        s: dict[str, Any] = {
            "tasks": len(rs),
            "compared": len(ratios),
            "irqlab_above_mast": sum(1 for r in rs if r["irqlab_above_mast"]),
            "equal": sum(1 for r in rs if r["mast"] is not None and r["irqlab"] == r["mast"]),
            "irqlab_below_mast": sum(1 for r in rs if r["mast"] is not None
                                     and r["irqlab"] is not None and r["irqlab"] < r["mast"]),
            "irqlab_unbounded_mast_bounded": sum(1 for r in rs if r["irqlab"] is None
                                                 and r["mast"] is not None),
            "mast_unbounded": sum(1 for r in rs if r["mast"] is None),
            "irqlab_fails_deadline_mast_meets": sum(
                1 for r in rs if r["mast_within_deadline"] and not r["irqlab_within_deadline"]),
        }
        if any("sim_max" in r for r in rs):
            s["sim_above_mast"] = sum(1 for r in rs if r.get("sim_above_mast"))
            s["sim_above_irqlab"] = sum(1 for r in rs if r.get("sim_above_irqlab"))
        if ratios:
            s["ratio_min"] = round(min(ratios), 4)
            s["ratio_median"] = round(statistics.median(ratios), 4)
            s["ratio_max"] = round(max(ratios), 4)
        return s

    out: dict[str, Any] = {"summary": True,
                           "models": len({r["model"] for r in rows}),
                           "skipped": sum(1 for r in rows if "skipped" in r)}
    out.update(stats(tasks))
    groups = sorted({r["group"] for r in tasks})
    out["by_group"] = {g: stats([r for r in tasks if r["group"] == g]) for g in groups}
    return out


def emit(rows: Iterable[dict[str, Any]], sink: list[dict[str, Any]]) -> None:
    for r in rows:
        sink.append(r)
        print(json.dumps(r), flush=True)


# --------------------------------------------------------------- generator


SHAPES = ("fp", "fp-heavy", "ss", "ss-noirq")


def _uunifast(rng: random.Random, n: int, u: float) -> list[float]:
    out = []
    s = u
    for i in range(1, n):
        nxt = s * rng.random() ** (1.0 / (n - i))
        out.append(s - nxt)
        s = nxt
    out.append(s)
    return out


def _logu(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def gen_fp(rng: random.Random) -> dict[str, Any]:
    """Plain fixed-priority tasks (linux path, one SCHED_FIFO VCPU each,
    deadline-monotonic), a generic interrupt (top + bottom half) and, half
    the time, a bursty NIC (release jitter (count - 1) gap)."""
    n = rng.randint(3, 6)
    us = _uunifast(rng, n, rng.uniform(0.5, 0.9))
    tasks = []
    for k, u in enumerate(us):
        t = int(round(_logu(rng, 1000, 100000) / 10)) * 10
        c = max(1, int(u * t))
        d = t if rng.random() < 0.5 else max(c, int(t * rng.uniform(0.5, 1.5)))
        tasks.append({"name": f"t{k}", "c": c, "t": t, "d": d})
    order = sorted(range(n), key=lambda k: (tasks[k]["d"], k))
    vcpus, tt = [], []
    for rank, k in enumerate(order):
        x = tasks[k]
        vcpus.append({"name": f"v{k}", "policy": "fifo", "priority": 90 - rank})
        e: dict[str, Any] = {"name": x["name"], "vcpu": f"v{k}", "period": f"{x['t']}us",
                             "program": [{"compute": f"{x['c']}us"}]}
        if x["d"] != x["t"]:
            e["deadline"] = f"{x['d']}us"
        tt.append(e)
    mi = int(_logu(rng, 500, 5000))
    devices: list[dict[str, Any]] = [{
        "name": "irq0", "kind": "generic", "class": "gen", "cpu": 0,
        "min_interarrival": f"{mi}us", "jitter": f"{rng.choice([0, mi // 4])}us",
        "isr": f"{rng.randint(1, 20)}us", "dsr": f"{rng.randint(0, 20)}us"}]
    if rng.random() < 0.5:
        count = rng.randint(2, 4)
        devices.append({
            "name": "eth0", "kind": "nic", "class": "net", "cpu": 0,
            "arrival": {"kind": "burst", "count": count, "gap": f"{rng.randint(10, 50)}us",
                        "every": f"{rng.randint(2, 10)}ms"},
            "top_half": f"{rng.randint(1, 5)}us", "bottom_half": f"{rng.randint(2, 10)}us",
            "packet": "256B"})
    return {"machine": {"cpus": 1, "path": "linux"},
            "simulation": {"duration": "1s", "seed": 1},
            "vcpus": vcpus, "tasks": tt, "devices": devices}


def gen_fp_heavy(rng: random.Random) -> dict[str, Any]:
    """As ``fp``, loaded to 85-97 % with deadlines up to 3 periods, so that
    busy windows hold several jobs of the analysed task."""
    m = gen_fp(rng)
    tasks = m["tasks"]
    us = _uunifast(rng, len(tasks), rng.uniform(0.85, 0.97))
    for t, u in zip(tasks, us, strict=True):
        p = ns(t["period"]) // 1000
        c = max(1, int(u * p))
        t["program"] = [{"compute": f"{c}us"}]
        t["deadline"] = f"{max(c, int(p * rng.uniform(1.0, 3.0)))}us"
    return m


def gen_ss(rng: random.Random, irq: bool) -> dict[str, Any]:
    """2-3 sporadic Main VCPUs at rate-monotonic priority, each with one
    periodic compute task (deadline = period): about half with a job the
    budget covers (task period = server period, or a multiple), the others
    with a job longer than the budget (task period k x server period, k 2-4,
    job at most 0.9 k budgets); and a periodic generic interrupt (top half
    only; quest-no-iovcpu, so no I/O VCPU) unless ``irq`` is false."""
    n = rng.randint(2, 3)
    us = _uunifast(rng, n, rng.uniform(0.3, 0.8))
    vcpus, tasks = [], []
    for k, u in enumerate(us):
        tp = int(round(_logu(rng, 1000, 50000) / 10)) * 10
        b = max(5, int(u * tp))
        vcpus.append({"name": f"v{k}", "policy": "sporadic", "budget": f"{b}us",
                      "period": f"{tp}us"})
        if rng.random() < 0.5:
            mult = 1 if rng.random() < 0.7 else rng.randint(2, 4)
            c = max(1, int(b * rng.uniform(0.3, 1.0)))
        else:
            mult = rng.randint(2, 4)
            c = max(b + 1, int(b * rng.uniform(1.05, 0.9 * mult)))
        tasks.append({"name": f"t{k}", "vcpu": f"v{k}", "period": f"{tp * mult}us",
                      "program": [{"compute": f"{c}us"}]})
    m: dict[str, Any] = {"machine": {"cpus": 1, "path": "quest-no-iovcpu" if irq else "quest"},
                         "simulation": {"duration": "1s", "seed": 1},
                         "vcpus": vcpus, "tasks": tasks}
    if irq:
        m["devices"] = [{"name": "irq0", "kind": "generic", "class": "gen", "cpu": 0,
                         "min_interarrival": f"{int(_logu(rng, 500, 5000))}us",
                         "jitter": "0us", "isr": f"{rng.randint(1, 10)}us", "dsr": "0us"}]
        m["classes"] = [{"name": "gen", "consumer": tasks[0]["name"]}]
    return m


def generate(shape: str, count: int, seed: int, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        rng = random.Random(f"irqlab-mast:{shape}:{seed}:{i}")
        if shape == "fp":
            m = gen_fp(rng)
        elif shape == "fp-heavy":
            m = gen_fp_heavy(rng)
        else:
            m = gen_ss(rng, irq=(shape == "ss"))
        p = out / f"{shape}-s{seed}-{i:03d}.yaml"
        p.write_text(f"# bench/mast_compare.py generate --shape {shape} --seed {seed} "
                     f"(system {i})\n" + yaml.safe_dump(m, sort_keys=False))
        paths.append(p)
    return paths


# ------------------------------------------------------------------ sanity


# hand-checked: file -> {task: MAST classic_rm bound in ns}
SANITY = {
    # a 58 us job alone in the top-priority sporadic server 90 us / 4.8 ms:
    # it never runs out of budget and nothing preempts it (MAST case 2.1)
    "sanity-ss-58us.yaml": {"job": 58_000},
    # textbook RTA: (1, 4), (2, 6), (3, 13) ms: 1, 3, 10 ms
    "sanity-fp.yaml": {"t1": 1_000_000, "t2": 3_000_000, "t3": 10_000_000},
    # 3376 us + ceil(w / 722 us) 6 us = 3406 us; the simulator passes it
    # (top halves charged to the budget, max_repl 32): see the file
    "sanity-ss-isr.yaml": {"t0": 3_406_000},
}


def sanity(tools: Sequence[str], irqlab_exe: str, sim_ns: int = 0) -> int:
    rows: list[dict[str, Any]] = []
    bad = 0
    for f, want in SANITY.items():
        for r in compare_model(SANITY_DIR / f, tools, irqlab_exe, None, sim_ns):
            r["expected_mast"] = want.get(r.get("task", ""))
            if "task" in r and r["mast"] != r["expected_mast"]:
                r["SANITY_FAILED"] = True
                bad += 1
            rows.append(r)
            print(json.dumps(r), flush=True)
    print(json.dumps({"sanity": "ok" if bad == 0 else f"{bad} MAST bound(s) differ "
                      "from the hand-checked value"}))
    return 1 if bad else 0


# --------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--tools", default="classic_rm",
                       help="MAST tools, comma-separated; the first is the one compared "
                       "(default classic_rm; e.g. classic_rm,offset_based)")
        p.add_argument("--irqlab", help="irqlab CLI (default: $IRQLAB, the venv's, PATH)")
        p.add_argument("--keep", type=Path,
                       help="write each MAST model and its results here")
        p.add_argument("--simulate", type=float, default=0.0, metavar="SECONDS",
                       help="also simulate each model this long (seeds 1-3) and report "
                       "the largest simulated response (sim_max, sim_above_mast)")

    c = sub.add_parser("compare", help="compare given irqlab models")
    c.add_argument("models", nargs="+", type=Path)
    common(c)
    g = sub.add_parser("generate", help="write N random systems of one shape (YAML)")
    g.add_argument("--shape", choices=SHAPES, required=True)
    g.add_argument("--count", type=int, default=50)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run", help="generate N systems of a shape and compare them")
    r.add_argument("--shape", choices=SHAPES, required=True)
    r.add_argument("--count", type=int, default=50)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--out", type=Path, help="where the YAML files go (default: a temp dir)")
    common(r)
    s = sub.add_parser("sanity", help="the hand-checked cases in bench/mast/")
    common(s)
    a = ap.parse_args(argv)

    if a.cmd == "generate":
        for p in generate(a.shape, a.count, a.seed, a.out):
            print(p)
        return 0
    tools = [t for t in a.tools.split(",") if t]
    try:
        mast_binary()
        exe = irqlab_binary(a.irqlab)
    except ToolMissing as e:
        print(json.dumps({"error": str(e)}), flush=True)
        print(f"mast_compare: {e}", file=sys.stderr)
        return 3
    sim_ns = int(a.simulate * 1e9)
    if a.cmd == "sanity":
        return sanity(tools, exe, sim_ns)
    rows: list[dict[str, Any]] = []
    if a.cmd == "compare":
        for m in a.models:
            emit(compare_model(m, tools, exe, a.keep, sim_ns), rows)
    else:
        with tempfile.TemporaryDirectory(prefix="mast_compare_gen_") as d:
            out = a.out or Path(d)
            for m in generate(a.shape, a.count, a.seed, out):
                emit(compare_model(m, tools, exe, a.keep, sim_ns), rows)
    print(json.dumps(summarize(rows)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
