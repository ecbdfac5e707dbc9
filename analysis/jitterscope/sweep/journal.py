"""The settings journal: every change to the machine written down (fsync'd) before it is made, and put back.

``DIR/journal.jsonl`` is append-only, one JSON record per line:

* ``{"op": "before", "knob", "path", "value"}``: the value ``path`` held before a change, written and fsync'd
  *before* the file is touched, so a kill at any later moment leaves a record of what to put back;
* ``{"op": "restored", "path"}``: ``path`` holds its original value again (read back);
* ``{"op": "process", "pid", "pgid", "start_ticks", "cmdline", "role", "run"}``: a process we started (a load,
  a capture), written right after it starts; ``{"op": "ended", "pid"}`` once it is reaped.

The original value of a path is the first ``before`` ever recorded for it (later runs record it again, but
the machine was put back in between).  Restoring is idempotent: a path is written only when it reads
differently from its original (writing a governor that is already set still costs a switch, the latency
spike of cluster-node-tuning-operator #699), then read back; a process is signalled only when its pid still
runs the recorded command line from the recorded start time (a recycled pid is left alone).  A torn last
line (a kill in the middle of a write) is ignored: the change it announced was not yet made.

Fault injection for the crash tests: ``JITTERSCOPE_SWEEP_FAULT=STEP[:N]`` kills this process with SIGKILL
the N-th time (default 1st) it reaches STEP (see :data:`FAULT_STEPS`), as ``capture/fault.c`` does for the
binary.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import JitterscopeError
from .knobs import KnobError, Machine, Setting

JOURNAL = "journal.jsonl"
FAULT_ENV = "JITTERSCOPE_SWEEP_FAULT"
FAULT_STEPS = (
    "before-recorded",     # the original value is on disk, the knob not yet written
    "setting-written",     # the knob is written, not yet read back
    "torn-record",         # half a journal record written (then killed)
    "process-started",     # a load is forked and held at its gate, its record not yet written
    "process-recorded",    # its record is written, the gate not yet opened
    "process-running",     # the gate is open: the load runs
    "restore-written",     # an original value written back, 'restored' not yet recorded
)
_fault_counts: dict[str, int] = {}


class RestoreError(JitterscopeError):
    """The machine could not be put back as the journal says; the message names the setting."""


def fault_due(step: str) -> bool:
    """Whether ``$JITTERSCOPE_SWEEP_FAULT`` names ``step`` and this is its N-th visit (counts the visit)."""
    wanted = os.environ.get(FAULT_ENV, "")
    name, _, count = wanted.partition(":")
    if name != step:
        return False
    _fault_counts[step] = _fault_counts.get(step, 0) + 1
    return _fault_counts[step] == int(count or 1)


def fault_point(step: str) -> None:
    """Die here (SIGKILL) when ``$JITTERSCOPE_SWEEP_FAULT`` names ``step`` (and this is its N-th visit)."""
    if fault_due(step):
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    pgid: int
    start_ticks: int
    cmdline: tuple[str, ...]
    role: str
    run: str


@dataclass
class JournalState:
    """What a journal says: original values, which paths are changed now, which processes may still run."""

    originals: dict[str, tuple[str, str]] = field(default_factory=dict)
    """path -> (knob, original value)."""
    changed: set[str] = field(default_factory=set)
    processes: dict[int, ProcessRecord] = field(default_factory=dict)
    """Recorded and not yet ended, by pid."""


def _records(path: Path) -> Iterator[dict[str, object]]:
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines) or (number == len(lines) - 1 and not lines[-1]):
                continue  # torn last record: the change it announced was never made
            raise RestoreError(f"{path}:{number}: not a journal record; the journal is damaged "
                               "(restore the settings it names by hand)") from None
        if isinstance(record, dict):
            yield record


def read_journal(directory: str | os.PathLike[str]) -> JournalState:
    """The state recorded in ``directory``'s journal (empty when there is none)."""
    state = JournalState()
    for record in _records(Path(directory) / JOURNAL):
        op = record.get("op")
        if op == "before":
            path = str(record["path"])
            state.originals.setdefault(path, (str(record["knob"]), str(record["value"])))
            state.changed.add(path)
        elif op == "restored":
            state.changed.discard(str(record["path"]))
        elif op == "process":
            pid = int(record["pid"])  # type: ignore[call-overload]
            state.processes[pid] = ProcessRecord(
                pid=pid, pgid=int(record["pgid"]), start_ticks=int(record["start_ticks"]),  # type: ignore[call-overload]
                cmdline=tuple(record["cmdline"]), role=str(record["role"]), run=str(record["run"]),  # type: ignore[arg-type]
            )
        elif op == "ended":
            state.processes.pop(int(record["pid"]), None)  # type: ignore[call-overload]
    return state


def process_identity(pid: int) -> tuple[int, tuple[str, ...]] | None:
    """(start time in clock ticks since boot, command line) of a running ``pid``, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    if fields[0] in ("Z", "X"):
        return None  # a zombie runs nothing; its parent reaps it
    return int(fields[19]), tuple(part.decode(errors="replace") for part in cmdline.split(b"\0") if part)


class Journal:
    """The journal of one sweep directory; the one place that changes and restores machine settings."""

    def __init__(self, directory: str | os.PathLike[str], machine: Machine) -> None:
        self.directory = Path(directory)
        self.path = self.directory / JOURNAL
        self.machine = machine
        self._drop_torn_record()
        self.state = read_journal(self.directory)

    def _drop_torn_record(self) -> None:
        """Cut a torn last record (a kill in the middle of its write): the change it announced was never made,
        and the next record must start on a line of its own."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
                handle.flush()
                os.fsync(handle.fileno())

    def _append(self, record: dict[str, object]) -> None:
        line = json.dumps(record, sort_keys=True).encode() + b"\n"
        new = not self.path.exists()
        if new:  # the first record says which machine (root) the paths belong to, for 'sweep restore'
            line = json.dumps({"op": "machine", "root": str(self.machine.root)}).encode() + b"\n" + line
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            if fault_due("torn-record"):
                os.write(fd, line[: len(line) // 2])
                os.fsync(fd)
                os.kill(os.getpid(), signal.SIGKILL)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:  # the file's name must survive a power cut too
            dfd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    # ---- settings --------------------------------------------------------------------------------------------

    def apply(self, settings: Sequence[Setting]) -> None:
        """Record each setting's current value, then write it and read it back.

        Raises
        ------
        KnobError
            A file cannot be read or written, or reads back differently (the message names the setting).
        """
        for setting in settings:
            try:
                current = self.machine.read(setting.path)
            except OSError as exc:
                raise KnobError(f"{setting.knob}: cannot read {setting.path}: {exc.strerror}") from None
            self._append({"op": "before", "knob": setting.knob, "path": setting.path, "value": current,
                          "time": time.time()})
            self.state.originals.setdefault(setting.path, (setting.knob, current))
            self.state.changed.add(setting.path)
            fault_point("before-recorded")
            if current != setting.value:
                self.machine.write(setting.path, setting.value)
            fault_point("setting-written")
            now = self.machine.read(setting.path)
            if now != setting.value:
                raise KnobError(f"{setting.knob}: wrote {setting.value!r} to {setting.path} but it reads {now!r}")

    def restore_settings(self) -> list[str]:
        """Put every changed path back to its original value; return the knobs restored.

        Every path is tried even when one fails; the failures then raise one :class:`RestoreError` naming them.
        """
        restored, failed = [], []
        for path in sorted(self.state.changed):
            knob, original = self.state.originals[path]
            try:
                if self.machine.read(path) != original:
                    self.machine.write(path, original)
                    fault_point("restore-written")
                now = self.machine.read(path)
            except (OSError, KnobError) as exc:
                failed.append(f"{knob} ({path}): {getattr(exc, 'strerror', None) or exc}")
                continue
            if now != original:
                failed.append(f"{knob} ({path}) reads {now!r}, not its original {original!r}")
                continue
            self._append({"op": "restored", "path": path, "time": time.time()})
            self.state.changed.discard(path)
            restored.append(knob)
        if failed:
            raise RestoreError("cannot put back " + "; ".join(failed))
        return restored

    def verify(self) -> None:
        """Read back every path the journal ever touched; a difference from its original is an error naming it."""
        wrong = []
        for path, (knob, original) in sorted(self.state.originals.items()):
            try:
                now = self.machine.read(path)
            except OSError as exc:
                wrong.append(f"{knob} ({path}): cannot read it: {exc.strerror}")
                continue
            if now != original:
                wrong.append(f"{knob} ({path}) reads {now!r}, the journal says it was {original!r}")
        if wrong:
            raise RestoreError("the machine is not as it was: " + "; ".join(wrong))

    # ---- processes -------------------------------------------------------------------------------------------

    def record_process(self, pid: int, role: str, run: str, *, cmdline: tuple[str, ...]) -> ProcessRecord:
        """Journal a process just started (leader of its own process group) that will exec ``cmdline``.

        It is identified later by its start time (from /proc, fixed for the life of the pid) and that command
        line, so that a recycled pid is never signalled.
        """
        fault_point("process-started")
        identity = process_identity(pid)
        start = identity[0] if identity else -1
        record = ProcessRecord(pid=pid, pgid=pid, start_ticks=start, cmdline=cmdline, role=role, run=run)
        self._append({"op": "process", "pid": pid, "pgid": pid, "start_ticks": start, "cmdline": list(cmdline),
                      "role": role, "run": run, "time": time.time()})
        self.state.processes[pid] = record
        fault_point("process-recorded")
        return record

    def record_ended(self, pid: int) -> None:
        self._append({"op": "ended", "pid": pid, "time": time.time()})
        self.state.processes.pop(pid, None)

    def end_processes(self, grace_s: float = 5.0) -> list[str]:
        """End every recorded process that still runs what was recorded (SIGTERM to its group, then SIGKILL).

        Returns one line per process: what was done.  A pid that now runs something else is not signalled.
        """
        done = []
        for record in list(self.state.processes.values()):
            identity = process_identity(record.pid)
            if identity is None:
                done.append(f"{record.role} {record.pid} ({' '.join(record.cmdline)}) had already ended")
            elif identity[0] != record.start_ticks or identity[1] not in (record.cmdline, _gated(record.cmdline)):
                done.append(f"pid {record.pid} now runs {' '.join(identity[1])!r}, not the recorded "
                            f"{record.role}; left alone")
            else:
                _end_group(record, grace_s)
                done.append(f"ended {record.role} {record.pid} ({' '.join(record.cmdline)})")
            self.record_ended(record.pid)
        return done

    def restore(self) -> tuple[list[str], list[str]]:
        """End recorded processes, put back every changed setting, and verify; (process lines, knobs restored)."""
        ended = self.end_processes()
        restored = self.restore_settings()
        self.verify()
        return ended, restored


def _gated(cmdline: tuple[str, ...]) -> tuple[str, ...]:
    from .loads import gated_cmdline  # loads imports this module; the gate's shape is its business
    return gated_cmdline(cmdline)


def _end_group(record: ProcessRecord, grace_s: float) -> None:
    """SIGTERM the process group, wait up to ``grace_s`` for the leader to go, then SIGKILL the group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(record.pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            try:  # reap it when it is our child; otherwise wait until it is gone
                if os.waitpid(record.pid, os.WNOHANG)[0] == record.pid:
                    return
            except ChildProcessError:
                if process_identity(record.pid) is None:
                    return
            time.sleep(0.02)


def lock_path(machine: Machine) -> Path:
    """The lock a sweep holds on a machine: in /run/lock for the real one; for a fake tree (tests), a hidden file
    beside the tree (not inside it: the tree must read back exactly as it was)."""
    if machine.root == Path("/"):
        return Path("/run/lock/jitterscope-sweep.lock")
    root = machine.root.resolve()
    return root.parent / f".{root.name}.jitterscope-sweep.lock"


def lock_machine(machine: Machine) -> int:
    """Hold the machine's sweep lock (released when the process ends, however it ends); give it back with
    :func:`unlock_machine`, which also removes the lock file.

    Two sweeps at once would each journal the other's settings as the originals and "restore" them.

    The file is removed by its holder while it still holds the lock, so a sweep that opened the file just before
    it went and then got the lock holds a lock on a file nobody else can find: it checks that the path still names
    the file it locked, and otherwise starts over on the new one.
    """
    path = lock_path(machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise JitterscopeError(f"another sweep (pid {holder}) is changing this machine's settings; wait for "
                                   f"it to finish (lock {path})") from None
        if _same_file(fd, path):
            break
        os.close(fd)  # its holder removed it between our open and our lock: take the new one
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def unlock_machine(machine: Machine, fd: int) -> None:
    """Give back the lock :func:`lock_machine` returned and remove its file (a sweep leaves nothing in /run/lock).

    The file goes while the lock is still held (see :func:`lock_machine` for why that is safe), and only when the
    path still names the file this lock is on.
    """
    path = lock_path(machine)
    try:
        if _same_file(fd, path):
            path.unlink()
    except OSError:
        pass  # a lock file that cannot be removed is harmless: the next sweep reuses it
    finally:
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` names the open file ``fd`` (False when it names none)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def restore_directory(directory: str | os.PathLike[str], machine: Machine | None = None) -> tuple[list[str], list[str]]:
    """``jitterscope sweep restore DIR``: end the sweep's recorded processes and put its settings back.

    Raises
    ------
    RestoreError
        ``DIR`` has no journal, or a setting cannot be put back (named).
    """
    directory = Path(directory)
    if not (directory / JOURNAL).is_file():
        raise RestoreError(f"{directory} has no {JOURNAL}; give the output directory of a 'jitterscope sweep run'")
    if machine is None:
        machine = Machine(_recorded_root(directory))
    lock = lock_machine(machine)  # not while a sweep changes the same machine
    try:
        return Journal(directory, machine).restore()
    finally:
        unlock_machine(machine, lock)


def _recorded_root(directory: Path) -> str:
    """The machine root the journal in ``directory`` was written against (its first record)."""
    for record in _records(directory / JOURNAL):
        if record.get("op") == "machine":
            return str(record.get("root") or "/")
    return "/"
