"""The one number parser (cli/options.py) and a property-based fuzz over every numeric option of every command.

Every numeric option of every subcommand is found by walking the real parser (so an option added tomorrow with
``type=number(...)`` is fuzzed too, and one added with ``type=float`` fails :func:`test_every_numeric_option_uses
_the_parser`). Hypothesis feeds NaN, ±inf, negative, zero, huge and non-numbers; each command runs in-process on a
small dataset: exit 0, or exit 1/2 with exactly one line on stderr, never a traceback.

The test profile is small (this CI is shared); ``benchmarks/fuzz_cli.py`` runs the long profile.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jitterscope.cli import build_parser, main
from jitterscope.cli.options import SEED_MAX, duration, number
from jitterscope.io import SimulationSpec, write_simulation

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
settings.register_profile("long", max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
PROFILE = os.environ.get("JITTERSCOPE_FUZZ_PROFILE", "ci")

# commands that run the capture binary (its options are parsed by the C side, tests/capture/test_options.py)
NOT_FUZZED = {"capture", "demo"}
HOSTILE = ["nan", "NaN", "inf", "-inf", "+inf", "-1", "0", "-0", "1e400", "1e20", "1e-400", "x", "", " ", "1,5",
           "0x10", "1_000", "2.5", "1e308", str(2**64), str(-(2**63))]


def _numeric_options() -> list[tuple[str, str, argparse.Action]]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found, seen = [], set()
    for name, sub in subparsers.choices.items():
        if name in NOT_FUZZED or id(sub) in seen:
            continue
        seen.add(id(sub))  # an alias (correlate) shares its parser
        for action in sub._actions:
            if action.option_strings and action.type is not None and getattr(action.type, "__name__", "") not in (
                    "input_path", "output_path", "scheduler_address"):  # paths and addresses: test_hostile_paths
                found.append((name, action.option_strings[-1], action))
    return found


OPTIONS = _numeric_options()


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _assert_clean(argv: list[str], code: int, err: str) -> None:
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 1, 2), (argv, code, err)
    if code:
        assert err.count("\n") == 1 and err.endswith("\n"), (argv, err)
        assert ": error: " in err, (argv, err)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return write_simulation(SimulationSpec(threads=1, samples=400), tmp_path_factory.mktemp("opt") / "s.parquet", 3)


def test_every_numeric_option_uses_the_parser() -> None:
    """No option of a dataset command takes a bare int/float: NaN and ranges would slip through."""
    assert len(OPTIONS) >= 30
    loose = [(c, o) for c, o, action in OPTIONS if action.type in (int, float)]
    assert not loose, loose


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "x", "", "1e400"])
def test_number_refuses_non_finite_and_non_numbers(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        number()(text)


def test_number_ranges_and_whole_numbers() -> None:
    assert number(min=0)("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match="out of range: expected a number > 0"):
        number(min=0, inclusive=False)("0")
    assert number(integer=True)("1e6") == 1_000_000 and isinstance(number(integer=True)("1e6"), int)
    assert number(integer=True)(str(2**70)) == 2**70  # exact, not through a float
    with pytest.raises(argparse.ArgumentTypeError, match="not a whole number"):
        number(integer=True)("2.5")
    with pytest.raises(argparse.ArgumentTypeError, match="<= 100 %"):
        number(max=100, unit="%")("100.5")
    assert number(integer=True, min=0, max=SEED_MAX)(str(SEED_MAX)) == SEED_MAX


@pytest.mark.parametrize(("text", "seconds"), [
    ("10", 10.0), ("10s", 10.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), ("1d", 86400.0), ("1.5h", 5400.0),
    ("250us", 250e-6), ("250µs", 250e-6), ("7ns", 7e-9), (" 3 s ", 3.0), ("1e3", 1000.0),
])
def test_duration_spellings(text: str, seconds: float) -> None:
    assert duration()(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("text", ["nan", "inf", "infs", "-1", "-1s", "0", "0ms", "1x", "10mm", "2 weeks", "s", "",
                                  "1e400", "5m30s"])
def test_duration_refuses_what_is_not_a_positive_finite_length_of_time(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"is not a duration|is out of range"):
        duration(max=86400)(text)
    with pytest.raises(argparse.ArgumentTypeError, match=r"out of range: expected .* <= 1d\)"):
        duration(max=86400)("25h")


def test_every_duration_option_is_d_duration_with_the_one_parser() -> None:
    """Durations are spelled one way on every command: -D/--duration (or a named interval) parsed by duration(),
    whose --help says a bare number is seconds."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    durations = {}
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            if getattr(action.type, "__name__", "") == "duration":
                durations.setdefault(name, []).append(action)
            elif action.option_strings and action.help != argparse.SUPPRESS:
                # a time point (--turbostat-start EPOCH_SECONDS) is not a duration
                assert action.metavar != "SECONDS" and "--seconds" not in action.option_strings, (name, action)
    assert {"demo", "simulate", "import"} <= set(durations), durations
    for name in ("demo", "simulate"):
        (action,) = [a for a in durations[name] if a.dest == "duration" and a.help != argparse.SUPPRESS]
        assert action.option_strings == ["-D", "--duration"] and "a number of seconds" in action.help
    help_text = next(a.help for a in subparsers._choices_actions if a.dest == "capture")
    assert "-D/--duration: a number of seconds, or with a unit" in help_text


def test_simulate_and_demo_take_every_spelling(tmp_path) -> None:
    code, out, err = _run(["simulate", "-o", str(tmp_path / "s.parquet"), "-D", "250ms", "--interval-us", "1000"])
    assert (code, err) == (0, "") and "x 250 wake-ups" in out
    args = build_parser().parse_args(["demo", "-D", "2m"])
    assert args.duration == 120.0
    assert build_parser().parse_args(["demo", "--seconds", "3"]).duration == 3.0  # the old spelling still works


def test_capture_wrapper_converts_durations_for_the_binary() -> None:
    """The binary's -D knows s, m, h, d: the wrapper passes plain seconds, and leaves every other option alone."""
    from jitterscope.cli.capture import binary_options
    from jitterscope.cli.options import UsageError

    assert binary_options(["-D", "10s", "-o", "x"]) == ["-D", "10", "-o", "x"]
    assert binary_options(["-qD500ms", "-a", "0"]) == ["-q", "-D", "0.5", "-a", "0"]
    assert binary_options(["--duration=1h", "--output", "-D"]) == ["-D", "3600", "--output", "-D"]
    assert binary_options(["--dur", "1d", "-i100"]) == ["-D", "86400", "-i", "100"]  # getopt's abbreviations
    assert binary_options(["-o", "-D", "-l", "5"]) == ["-o", "-D", "-l", "5"]  # "-D" is the output's name here
    assert binary_options(["-D", "1ns"]) == ["-D", "0.000000001"]
    assert binary_options(["--", "-D", "5m"]) == ["--", "-D", "5m"]
    assert binary_options(["-D"]) == ["-D"]  # no value: the binary says so
    with pytest.raises(UsageError, match="argument -D/--duration: 'nan' is not a duration"):
        binary_options(["-D", "nan"])
    with pytest.raises(UsageError, match=r"'0\.1ns' is shorter than 1 ns"):
        binary_options(["--duration=0.1ns"])


_TOKENS = st.one_of(
    st.sampled_from(["-D", "--duration", "--dur", "-qD", "-D1m", "--duration=", "-o", "--output", "-i", "-f", "--",
                     "--trace", "--trace=irq", "-q", "-l", "--t", "-a", "10", "500ms", "1e3", "nan", "-1", "0.5ns",
                     "2d", "x", ""]),
    st.text(max_size=5),
)


@settings(settings.get_profile(PROFILE))
@given(st.lists(_TOKENS, max_size=8))
def test_fuzz_the_capture_wrappers_option_scan(tokens: list[str]) -> None:
    """Any command line: a list for the binary or one UsageError, and the result is a fixed point (every duration
    already plain seconds, every other token where it was)."""
    from jitterscope.cli.capture import binary_options
    from jitterscope.cli.options import UsageError

    try:
        out = binary_options(tokens)
    except UsageError as exc:
        assert "\n" not in str(exc) and "-D/--duration" in str(exc)
        return
    assert binary_options(out) == out
    if not any("D" in t or t.startswith("--d") for t in tokens):  # no duration: the same text, at most re-split
        assert "".join(out) == "".join(tokens) and len(out) >= len(tokens)


@pytest.mark.parametrize(("command", "option", "action"), OPTIONS, ids=[f"{c}{o}" for c, o, _ in OPTIONS])
def test_hostile_values_refused_in_one_line_by_every_option(command, option, action, tmp_path) -> None:
    """Only the parser runs here (fast): a value it accepts is finite and within the option's range."""
    parser = build_parser()
    for text in HOSTILE:
        try:
            value = action.type(text)
        except argparse.ArgumentTypeError:
            argv = [command, "DATASET", "-o", str(tmp_path / "x"), f"{option}={text}"]
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(argv)
            assert code == 2 and err.getvalue().count("\n") == 1, (argv, err.getvalue())
            assert f"argument {option}" in err.getvalue() or "error:" in err.getvalue()
            continue
        assert isinstance(value, int) or math.isfinite(value), (command, option, text)
    del parser


def _argv(command: str, option: str, text: str, small: Path, out: Path) -> list[str]:
    dataset = str(small)
    base = {
        "simulate": ["simulate", "-o", str(out / "sim.parquet"), "--print-spec"],
        "summary": ["summary", dataset, "-q"],
        "spectrum": ["spectrum", dataset],
        "power": ["power", dataset, "--surrogates", "0"],
        "tails": ["tails", dataset],
        "compare": ["compare", dataset, dataset, "--resamples", "20"],
        "report": ["report", dataset, "-o", str(out / "r.pdf"), "--sections", "provenance", "-q", "--force"],
        "export": ["export", dataset, "--format", "hgrm", "-o", str(out / "e.hgrm"), "--force"],
        "import": ["import", dataset, "-o", str(out / "i.parquet"), "--force"],
        "fleet": ["fleet", dataset, "--scheduler", "serial", "--no-progress"],
    }.get(command, [command, dataset])  # a new command is fuzzed as COMMAND DATASET; add a line for a better base
    return [*base, f"{option}={text}"]


_VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(max_size=6),
)


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_fuzz_every_numeric_option_of_every_command(data, small, tmp_path_factory) -> None:
    command, option, _ = data.draw(st.sampled_from(OPTIONS), label="option")
    text = data.draw(_VALUES, label="value")
    if "\x00" in text:
        text = text.replace("\x00", "")  # argv cannot hold NUL
    out = tmp_path_factory.mktemp("fuzz")
    argv = _argv(command, option, text, small, out)
    code, _, err = _run(argv)
    _assert_clean(argv, code, err)


class _CountingStream(io.StringIO):
    """A stdout that counts its writes."""

    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_print_json_is_one_write_with_the_same_escaped_text(monkeypatch, ensure_ascii) -> None:
    # what json.dump wrote token by token through the CLI's escaping stdout, print_json writes in one pass
    from jitterscope.cli.options import VisibleText, print_json

    document = {"host\x1b]0;title\x07": ["a\rb", "\x00", "\ud800", "\x85 nel", "é", 1.5, None],
                "nested": {"k": list(range(50))}}
    old = _CountingStream()
    import json

    json.dump(document, VisibleText(old), indent=2, ensure_ascii=ensure_ascii)
    VisibleText(old).write("\n")
    new = _CountingStream()
    monkeypatch.setattr("sys.stdout", VisibleText(new))
    print_json(document, indent=2, ensure_ascii=ensure_ascii)
    assert new.getvalue() == old.getvalue()
    assert new.writes == 1 and old.writes > 50
    assert "\x1b" not in new.getvalue() and "\x85" not in new.getvalue()  # still escaped
