"""Suite-wide collection rules.

Tests that run real-time processes (the capture binary in timer or poll mode, FIFO spinners, cyclictest,
oslat, jitterdebugger, a sweep's loads) share one xdist group, so ``make test`` (``-n 2 --dist loadgroup``)
runs them one after another on one worker: a FIFO 99 poll loop of one test on the CPU another test
measures made that test's thread skip periods and its spikes land outside the planted spinner's bursts.
They are both the disturbance and its victims; the other worker runs the analyses beside them at
SCHED_OTHER, which a FIFO capture preempts.

A suite started as a background job of a shell without job control (``make test &`` in a script) inherits SIGINT
ignored, and Python then installs no Ctrl-C handler: the tests of Ctrl-C (in this process, and in the commands
it starts, which inherit an ignored signal across exec) could not interrupt anything.  Each test process puts
Python's own handler back first (a handled signal is reset to the default in the commands it starts).
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
REALTIME_GROUP = "realtime"
REALTIME_PATHS = (
    "capture",
    "test_contract.py",
    "io/test_capture_wrapper.py",
    "io/test_hostile_signals.py",
    "io/test_hostile_anonymize.py",
    "io/importers/test_cyclictest.py",
    "sweep/test_run.py",
)


def runs_realtime_processes(path: Path) -> bool:
    relative = path.resolve().relative_to(TESTS).as_posix()
    return any(relative == entry or relative.startswith(entry + "/") for entry in REALTIME_PATHS)


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the mark into the node id's @group
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if runs_realtime_processes(Path(item.fspath)):
            item.add_marker(pytest.mark.xdist_group(REALTIME_GROUP))


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="session")
def load_benchmark() -> Callable[[str], ModuleType]:
    """A script of benchmarks/ as a module (``load_benchmark("trace_cost")``): tests check the pieces the benchmarks
    print their verdicts with.  Registered in sys.modules: dataclasses look their module up there."""
    def load(name: str) -> ModuleType:
        if name in sys.modules:
            return sys.modules[name]
        if str(BENCHMARKS) not in sys.path:  # a script imports its siblings (_common) as when run from there
            sys.path.append(str(BENCHMARKS))
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    return load
