"""``jitterscope sweep run``: every run of a plan's design, in order, with the machine put back after each.

Per run: apply its settings (journaled, read back), start its load (journaled, pinned), capture warm-up +
duration into ``DIR/runs/<id>/``, stop and reap the load (its output kept as ``DIR/runs/<id>.load.log``), put
the settings back, and record the factor levels in the dataset's metadata (``jitterscope.experiment``).  The
manifest (``DIR/manifest.json``) is rewritten atomically after every run, so ``--resume`` knows what is done.
SIGINT, SIGTERM and SIGHUP end the current run (the capture gets the signal and makes its final flush), put the
machine back and stop; a SIGKILL leaves the journal for ``jitterscope sweep restore``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dataset import write_atomically
from ..errors import CaptureError, JitterscopeError
from ..io import capture_binary
from .journal import JOURNAL, Journal, lock_machine, unlock_machine
from .knobs import Machine
from .loads import Started, start_process, stop_process
from .plan import Plan, PlanError, PlannedRun, check_plan, read_plan

MANIFEST = "manifest.json"
PLAN_COPY = "plan.toml"
RUNS = "runs"
LOAD_SETTLE_S = 0.2
"""Pause between starting a load and starting the capture: the load's workers are forked by then (the
warm-up, marked in the metadata, covers the rest of its ramp)."""


class SweepInterrupted(BaseException):
    """A signal ended the sweep (after the machine was put back)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class SweepResult:
    directory: Path
    runs: list[dict[str, Any]] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(run["status"] == "complete" for run in self.runs)

    def summary_line(self) -> str:
        done = sum(run["status"] == "complete" for run in self.runs)
        failed = [run["id"] for run in self.runs if run["status"] == "failed"]
        return (f"sweep {self.directory}: {done}/{len(self.runs)} runs complete"
                + (f", failed: {', '.join(failed)}" if failed else "")
                + "; machine put back and verified (journal.jsonl); next: jitterscope sweep report "
                + str(self.directory))


def run_sweep(plan_path: str | os.PathLike[str], output: str | os.PathLike[str], *, resume: bool = False,
              progress: bool = True, machine: Machine | None = None,
              log: Callable[[str], None] | None = None) -> SweepResult:
    """Run ``plan_path``'s design into ``output``.

    Raises
    ------
    PlanError
        The plan cannot run on this machine (every problem, one line each); nothing was changed.
    JitterscopeError
        ``output`` exists (without ``resume``) or is not this plan's sweep, or the machine cannot be put back.
    SweepInterrupted, KeyboardInterrupt
        A signal ended the sweep; the machine was put back first.
    """
    plan = read_plan(plan_path)
    machine = machine or Machine(plan.machine_root)
    check = check_plan(plan, machine)
    if not check.ok:
        raise PlanError(check.problems)
    lock = lock_machine(machine)  # before anything is read as "the original": one sweep per machine at a time
    try:
        return _run_locked(plan, machine, Path(output), resume=resume, progress=progress, log=log)
    finally:
        unlock_machine(machine, lock)


def _run_locked(plan: Plan, machine: Machine, directory: Path, *, resume: bool, progress: bool,
                log: Callable[[str], None] | None) -> SweepResult:
    say = log or ((lambda line: print(line, file=sys.stderr, flush=True)) if progress else (lambda line: None))
    manifest = _open_directory(directory, plan, resume)
    journal = Journal(directory, machine)
    if journal.state.changed or journal.state.processes:  # a killed sweep left the machine changed: repair first
        ended, restored = journal.restore()
        say(f"sweep: repaired what a killed run left: {'; '.join(ended + restored) or 'nothing left running'}")
    result = SweepResult(directory=directory)
    runs = plan.design()
    handlers = _install_signal_handlers()
    current: dict[str, Started | None] = {"capture": None, "load": None}
    started_at = time.monotonic()
    done_seconds: list[float] = []
    try:
        for run in runs:
            entry = manifest["runs"][run.position]
            if entry["status"] == "complete":
                continue
            remaining = sum(1 for r in manifest["runs"] if r["status"] != "complete")
            per_run = (sum(done_seconds) / len(done_seconds)) if done_seconds else plan.run_seconds() + 1
            say(f"sweep: run {run.position + 1}/{len(runs)} {run.id} [{run.condition.label}] block "
                f"{run.block + 1}; ETA {_clock(remaining * per_run)}")
            begin = time.monotonic()
            entry.update(_one_run(plan, run, directory, journal, machine, current))
            done_seconds.append(time.monotonic() - begin)
            _write_manifest(directory, manifest)
            if entry["status"] != "complete":
                say(f"sweep: {run.id} failed: {entry.get('error')}")
    except BaseException as exc:
        for role in ("capture", "load"):
            started = current[role]
            if started is not None:
                stop_process(started, journal)
        if isinstance(exc, SweepInterrupted | KeyboardInterrupt):
            manifest["interrupted"] = str(exc) or "SIGINT"
            _write_manifest(directory, manifest)
        raise
    finally:
        # no signal may cut the restore short: hold them until the machine is back (the kernel keeps one each)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        try:
            _, result.restored = journal.restore()  # every exit: settings back, read back and compared
        finally:
            _restore_signal_handlers(handlers)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    say(f"sweep: {len(runs)} runs in {_clock(time.monotonic() - started_at)}")
    result.runs = manifest["runs"]
    return result




def _open_directory(directory: Path, plan: Plan, resume: bool) -> dict[str, Any]:
    runs = plan.design()
    if resume:
        try:
            manifest = json.loads((directory / MANIFEST).read_text())
        except (OSError, ValueError):
            raise JitterscopeError(f"{directory} has no readable {MANIFEST}; --resume continues a sweep's "
                                   "directory (drop --resume to start a new one)") from None
        if manifest.get("plan_text") != plan.text:
            raise JitterscopeError(f"{directory} was run with another plan; --resume needs the same plan file "
                                   f"(its copy is {directory / PLAN_COPY})")
        return manifest
    if directory.exists() and any(directory.iterdir()):
        raise JitterscopeError(f"{directory} exists and is not empty; choose a new directory, or --resume it")
    (directory / RUNS).mkdir(parents=True, exist_ok=True)
    (directory / PLAN_COPY).write_text(plan.text)
    manifest = {
        "version": 1, "plan": plan.source, "plan_text": plan.text, "machine_root": plan.machine_root,
        "factors": {name: list(levels) for name, levels in plan.factors.items()},
        "design": {"replicates": plan.replicates, "order": plan.order, "seed": plan.seed,
                   "warmup_s": plan.warmup_s, "duration_s": plan.duration_s},
        "capture": dict(plan.capture),
        "runs": [{"id": run.id, "position": run.position, "block": run.block, "condition": run.condition.index,
                  "label": run.condition.label, "levels": dict(run.condition.levels), "status": "pending"}
                 for run in runs],
    }
    _write_manifest(directory, manifest)
    return manifest


def _write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    with write_atomically(directory / MANIFEST, error=JitterscopeError) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str))


def _one_run(plan: Plan, run: PlannedRun, directory: Path, journal: Journal, machine: Machine,
             current: dict[str, Started | None]) -> dict[str, Any]:
    """Apply, load, capture, stop, restore; the run's manifest entry."""
    out = directory / RUNS / run.id
    if out.exists():  # a run cut short before (resume): start it again
        shutil.rmtree(out)
    entry: dict[str, Any] = {"started": time.time()}
    settings = plan.settings(run.condition, machine)
    journal.apply(settings)
    entry["settings"] = [{"knob": s.knob, "path": s.path, "value": s.value,
                          "before": journal.state.originals[s.path][1]} for s in settings]
    load_argv = plan.load_command(run.condition)
    load_cpus = plan.load_cpus_for(run.condition, machine)
    load_status = None
    try:
        if load_argv:
            current["load"] = start_process(load_argv, journal, role="load", run=run.id, cpus=load_cpus,
                                            log=directory / RUNS / f"{run.id}.load.log")
            time.sleep(LOAD_SETTLE_S)
        capture_argv = [str(capture_binary()), *plan.capture_options(run.condition), "-D",
                        f"{plan.run_seconds():g}", "-o", str(out), "-q"]
        entry["capture_argv"] = capture_argv
        current["capture"] = start_process(capture_argv, journal, role="capture", run=run.id,
                                           log=directory / RUNS / f"{run.id}.capture.log")
        status = _wait(current["capture"])
        stop_process(current["capture"], journal)
        current["capture"] = None
        if current["load"] is not None:
            load_status = stop_process(current["load"], journal)
            current["load"] = None
    finally:
        journal.restore_settings()  # after every run that changed something (ones with no knob change nothing)
    entry.update({"ended": time.time(), "capture_status": status, "load_status": load_status,
                  "load_cpus": load_cpus if load_argv else None})
    if status != 0:
        lines = (directory / RUNS / f"{run.id}.capture.log").read_text(errors="replace").strip().splitlines()
        entry.update({"status": "failed", "error": lines[-1] if lines else f"capture exit status {status}"})
        return entry
    experiment = {
        "sweep": directory.name, "run": run.id, "position": run.position, "replicate": run.block + 1,
        "condition": run.condition.index, "label": run.condition.label, "levels": dict(run.condition.levels),
        "warmup_ns": round(plan.warmup_s * 1e9), "order": plan.order, "seed": plan.seed,
        "settings": entry["settings"],
        "load": ({"command": load_argv, "cpus": load_cpus, "exit_status": load_status,
                  "log": f"{run.id}.load.log"} if load_argv else None),
    }
    try:
        annotate_dataset(out, experiment)
    except JitterscopeError as exc:
        entry.update({"status": "failed", "error": str(exc)})
        return entry
    entry["status"] = "complete"
    return entry


def _wait(started: Started) -> int:
    """Wait for the capture (PEP 475 resumes after each signal our handlers do not turn into an exception)."""
    return started.popen.wait()


def annotate_dataset(path: Path, experiment: dict[str, Any]) -> None:
    """Add ``jitterscope.experiment`` to every part's metadata (each part rewritten atomically).

    Raises
    ------
    CaptureError
        The capture wrote no part.
    """
    import pyarrow.parquet as pq

    parts = sorted(path.glob("part-*.parquet"))
    if not parts:
        raise CaptureError(f"the capture wrote no dataset into {path}")
    value = json.dumps(experiment, sort_keys=True, default=str).encode()
    for part in parts:
        table = pq.read_table(part)
        metadata = dict(table.schema.metadata or {})
        metadata[b"jitterscope.experiment"] = value
        with write_atomically(part, error=CaptureError) as tmp:
            pq.write_table(table.replace_schema_metadata(metadata), tmp, compression="zstd", use_dictionary=False,
                           write_statistics=True)


def _install_signal_handlers() -> dict[int, Any]:
    def handler(signum: int, _frame: object) -> None:
        raise SweepInterrupted(signum)

    return {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


def _restore_signal_handlers(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


__all__ = ["JOURNAL", "MANIFEST", "SweepInterrupted", "SweepResult", "annotate_dataset", "run_sweep"]
