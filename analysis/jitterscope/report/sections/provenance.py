"""The dataset page and the appendix: where the data comes from, the summary table, the raw records.

After the findings page: what was measured (kind, rows, threads, files), the
latency summary and the counters.  The appendix says how to make the same
report again (tool and library versions, parameters, hashes, the command) and
holds the raw records: settings as asked and granted, the import source, the
seed and spec of a simulation, the environment.
"""

from __future__ import annotations

import platform
import shlex
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ...render import Page, Table, key_value_table, text_pages
from ...summary import summary_table
from ..build import ReportContext, register_section, registered_sections

SIMULATED_BANNER = "SIMULATED DATA — synthetic wake-ups from jitterscope simulate, not a measurement"


@register_section(order=10, name="provenance")
def provenance_section(ctx: ReportContext) -> Sequence[Page | Table]:
    """After the findings: what the dataset is, the summary table and the counters it has.

    The hashes, the settings, the import source, the planted truth and the environment are raw
    records: they are in the appendix.
    """
    meta = ctx.dataset.metadata
    tables = [dataset_table(ctx), summary_table(ctx.summary),
              counters_table(meta.counters, ctx.dataset.columns, meta.kind)]
    banner = SIMULATED_BANNER if meta.kind == "simulation" else None
    return list(text_pages("provenance", f"jitterscope report: {ctx.dataset.path.name}", tables, banner=banner))


def raw_metadata_tables(ctx: ReportContext) -> list[Table]:
    """The recorded settings, import source, a simulation's seed and spec, and the environment, for the appendix."""
    meta = ctx.dataset.metadata
    tables = []
    if meta.settings:
        tables.append(settings_table(meta.settings))
    if meta.source:
        tables.append(key_value_table("source", "Imported from", meta.source, headers=("field", "value")))
    if meta.ground_truth:
        tables.append(simulation_spec_table(meta.ground_truth))
    tables.append(environment_snapshot_table(meta.environment))
    return tables


PLANTED_LIST_SHOWN = 8
"""Lists longer than this are shown as their count, first and last value."""


def simulation_spec_table(ground_truth: Mapping[str, Any]) -> Table:
    """How a simulation was made: its seed and spec, one parameter per row (to make it again).

    What each effect drew (SMI times, transitions, stalls ...) is not repeated here: the planted-versus-recovered
    table after page 1 sets every planted effect beside what was recovered, and the dataset's metadata key
    ``jitterscope.ground_truth`` holds every planted value.
    """
    rows: list[tuple[str, Any]] = []
    _flatten_planted("", {k: v for k, v in ground_truth.items() if k in ("seed", "spec")}, rows)
    return key_value_table("simulation-spec", "Simulation: seed and spec", rows, headers=("field", "value"),
                           notes=("What each effect planted, and what the analyses recovered of it: the "
                                  "planted-versus-recovered table after page 1. Every planted value is in the "
                                  "dataset's metadata key jitterscope.ground_truth.",))


def _flatten_planted(prefix: str, value: Any, rows: list[tuple[str, Any]]) -> None:
    if isinstance(value, Mapping) and set(value) == {"count", "values"}:
        _flatten_planted(prefix, value["values"], rows)  # {"count": n, "values": [...]} says n twice
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _flatten_planted(f"{prefix}.{key}" if prefix else str(key), item, rows)
    elif isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value):
        for i, item in enumerate(value):
            _flatten_planted(f"{prefix}[{i}]", item, rows)
    elif isinstance(value, list | tuple) and len(value) > PLANTED_LIST_SHOWN:
        rows.append((prefix, f"{len(value):,} values: {value[0]}, {value[1]}, ..., {value[-1]}"))
    elif isinstance(value, list | tuple):
        rows.append((prefix, ", ".join(str(v) for v in value) if value else "none"))
    else:
        rows.append((prefix, value))


def dataset_table(ctx: ReportContext) -> Table:
    """What the dataset is: kind, rows, threads, files with sha256, writer and report tool."""
    meta = ctx.dataset.metadata
    prov = ctx.provenance
    kind = meta.kind.upper() if meta.kind == "simulation" else meta.kind
    status = meta.status or {}
    items: list[tuple[str, Any]] = [
        ("dataset", prov.dataset_path),
        ("kind", kind),
        ("rows", f"{ctx.dataset.num_rows:,}" + (" (histogram bins)" if ctx.dataset.is_histogram else " (wake-ups)")),
        ("threads", f"{len(meta.threads)} (CPUs {_cpus(meta.threads)})"),
        ("intervals", ", ".join(sorted({f'{t.interval_ns / 1000:g} µs' if t.interval_ns > 0 else "not recorded"
                                        for t in meta.threads})) or "-"),
        ("schema version", meta.schema_version),
        ("written by", f"{meta.tool.get('name', '?')} {meta.tool.get('version', '?')}"),
        ("capture status", f"{status.get('state', 'unknown')} {status.get('reason', '')}".strip()),
        ("files", f"{len(prov.files)} ({sum(size for _, _, size in prov.files):,} bytes; sha256 in the appendix)"),
    ]
    items += [("report by", f"jitterscope {prov.tool_version}"),
              ("generated", prov.generated_utc + (" (SOURCE_DATE_EPOCH)" if prov.reproducible else ""))]
    return key_value_table("dataset", "Dataset", items)


def settings_table(settings: Mapping[str, Any]) -> Table:
    """Capture settings side by side: as asked and as granted."""
    asked = settings.get("asked") or {}
    granted = settings.get("granted") or {}
    keys = list(asked) + [k for k in granted if k not in asked]
    rows = tuple((key, _text(asked.get(key)), _text(granted.get(key))) for key in keys if key != "degraded")
    degraded = granted.get("degraded") or []
    notes = tuple(f"degraded: {line}" for line in degraded) or ("nothing degraded: everything granted as asked",)
    return Table(name="settings", title="Capture settings", columns=("setting", "asked", "granted"), rows=rows,
                 formats=("", "", ""), notes=notes, align=("l", "l", "l"))


def counters_table(counters: Mapping[str, Any] | None, columns: Sequence[str], kind: str) -> Table:
    """Which counter columns the dataset has, and why any is missing."""
    counters = counters or {}
    from ...dataset import COUNTER_COLUMNS

    missing = counters.get("missing") or {}
    rows = []
    for name in ("tsc", "run_cpu", "read_cycles", *COUNTER_COLUMNS):
        present = name in columns
        rows.append((name, "yes" if present else "no", "" if present else str(missing.get(name, "not recorded"))))
    notes = (f"counter source: {counters.get('source', 'unknown')}",) if kind != "histogram" else (
        "histogram-only data: no per-wake-up columns",)
    return Table(name="counters", title="Counters available", columns=("column", "present", "why missing"),
                 rows=tuple(rows), formats=("", "", ""), notes=notes, align=("l", "l", "l"))


def environment_snapshot_table(environment: Mapping[str, Any] | None) -> Table:
    """The environment snapshot, flattened one key per row (per-CPU cpufreq and idle states summarised)."""
    if not environment:
        return key_value_table("environment", "Environment", [("environment", "not recorded in this dataset")])
    items: list[tuple[str, Any]] = []
    for key, value in environment.items():
        if key == "cpufreq" and isinstance(value, Mapping):
            for cpu, info in sorted(value.items(), key=lambda kv: _int_key(kv[0])):
                items.append((f"cpufreq CPU {cpu}", _text(info)))
        elif key == "cpuidle" and isinstance(value, Mapping):
            items.append(("cpuidle driver/governor",
                          f"{_text(value.get('driver'))} / {_text(value.get('governor'))}"))
            for state in value.get("states") or []:
                items.append((f"idle state {state.get('name')}",
                              f"exit latency {state.get('exit_latency_us')} µs"
                              f"{' (disabled)' if state.get('disabled') else ''}: {state.get('desc', '')}"))
        else:
            items.append((key, _text(value)))
    return key_value_table("environment", "Environment", items)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    return str(value)


def _cpus(threads: Sequence[Any]) -> str:
    return ",".join(str(t.cpu) if t.cpu >= 0 else "?" for t in threads) if threads else "-"


def _int_key(text: str) -> tuple[int, str]:
    return (int(text), text) if text.isdigit() else (1 << 30, text)


LIBRARIES = ("numpy", "pyarrow", "pandas", "scipy", "matplotlib")


@register_section(order=100, name="appendix")
def appendix_section(ctx: ReportContext) -> Sequence[Page | Table]:
    """Reproducibility appendix: versions, parameters, dataset hashes and the command that made this report."""
    return list(text_pages("appendix", "Reproducibility", [reproducibility_table(ctx), *raw_metadata_tables(ctx)]))


def reproducibility_table(ctx: ReportContext) -> Table:
    """Everything needed to make this report again, byte for byte."""
    prov = ctx.provenance
    epoch = (f"{prov.source_date_epoch} ({prov.generated_utc})" if prov.source_date_epoch is not None
             else "not set: the report carries the time it was made, so its bytes differ run to run")
    command = ["jitterscope", "report", prov.dataset_path, "-o", ctx.output, "--top", str(ctx.top_k)]
    if ctx.figures_dir is not None:
        command += ["--figures", ctx.figures_dir]
    if ctx.figure_width is not None:
        command += ["--figure-width", ctx.figure_width]
    if ctx.sections != tuple(section.name for section in registered_sections()):
        command += ["--sections", ",".join(ctx.sections)]
    if prov.source_date_epoch is not None:
        command.insert(0, f"SOURCE_DATE_EPOCH={prov.source_date_epoch}")
    items: list[tuple[str, Any]] = [
        ("jitterscope", prov.tool_version),
        ("python", platform.python_version()),
        *((name, _version(name)) for name in LIBRARIES),
        ("platform", platform.platform()),
        ("SOURCE_DATE_EPOCH", epoch),
        ("sections", ", ".join(ctx.sections)),
        ("spike catalogue size", ctx.top_k),
        ("dataset", prov.dataset_path),
        ("dataset sha256", prov.dataset_sha256),
        *((f"file {name}", f"sha256 {digest}, {size:,} bytes") for name, digest, size in prov.files),
        ("command", shlex.join(command)),
    ]
    return key_value_table(
        "reproducibility", "Reproducibility", items,
        notes=("The same command with the same versions and dataset gives identical bytes when "
               "SOURCE_DATE_EPOCH is set.",),
    )


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"
