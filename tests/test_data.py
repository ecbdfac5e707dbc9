"""The example datasets in data/: valid, small, packed, documented, and (simulations) reproducible.

Every ``data/*.parquet`` must validate (as ``jitterscope validate`` does), be a
``jitterscope pack`` file whose rows still match its checksum, stay under 5 MB,
and be listed in ``data/README.md``; every file the README lists must exist.
A simulated dataset must be exactly what the README's command makes: its spec
file simulated with the recorded seed gives the same rows (same content checksum).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import open_dataset, validate_dataset
from jitterscope.io import content_sha256, load_spec, simulate, sort_keys, verify_pack

DATA = Path(__file__).resolve().parents[1] / "data"
README = DATA / "README.md"
DATASETS = sorted(DATA.glob("*.parquet"))
IDS = [p.stem for p in DATASETS]
MAX_BYTES = 5 * 1024 * 1024
SIMULATIONS = [p for p in DATASETS if p.name.startswith("sim-")]
# What the issue asks data/ to hold: a capture of this machine, two imports, two simulated stories of two runs each.
REQUIRED = {
    "capture-1khz-30s.parquet": "capture",
    "cyclictest-import.parquet": "import",
    "jitterdebugger-import.parquet": "import",
    "sim-timer60hz-jittery.parquet": "simulation",
    "sim-timer60hz-steady.parquet": "simulation",
    "sim-nohz-none.parquet": "simulation",
    "sim-nohz-spikes.parquet": "simulation",
}


def _listed() -> set[str]:
    """File names in the README's table (first column, in backticks)."""
    return set(re.findall(r"^\| `([^`]+\.parquet)` \|", README.read_text(), flags=re.MULTILINE))


def test_the_required_datasets_are_there_with_their_kinds() -> None:
    assert {p.name for p in DATASETS} >= set(REQUIRED)
    for name, kind in REQUIRED.items():
        assert open_dataset(DATA / name).metadata.kind == kind, name


def test_readme_lists_exactly_the_datasets() -> None:
    assert _listed() == {p.name for p in DATASETS}


@pytest.mark.parametrize("path", DATASETS, ids=IDS)
def test_dataset_is_small(path: Path) -> None:
    assert path.stat().st_size < MAX_BYTES


@pytest.mark.parametrize("path", DATASETS, ids=IDS)
def test_dataset_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = validate_dataset(path)
    assert result.valid, result.problems
    assert result.rows > 0
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"valid: {path}")


@pytest.mark.parametrize("path", DATASETS, ids=IDS)
def test_dataset_is_packed_and_its_rows_match_the_checksum(path: Path) -> None:
    dataset = open_dataset(path)
    assert len(dataset.files) == 1
    assert dataset.metadata.pack is not None and dataset.metadata.pack["rows"] == dataset.num_rows
    assert verify_pack(path) == dataset.metadata.pack["sha256"]


@pytest.mark.parametrize("path", [p for p in DATASETS if not p.name.startswith("sim-")],
                         ids=[p.stem for p in DATASETS if not p.name.startswith("sim-")])
def test_real_datasets_are_anonymized(path: Path) -> None:
    metadata = open_dataset(path).metadata
    assert "environment.hostname" in metadata.pack["anonymized"]
    assert metadata.environment["hostname"].startswith("anon-")


@pytest.mark.parametrize("path", SIMULATIONS, ids=[p.stem for p in SIMULATIONS])
def test_simulation_is_what_its_readme_command_makes(path: Path) -> None:
    """The README's 'jitterscope simulate --spec data/specs/NAME.json --seed 7' gives these very rows."""
    spec_path = DATA / "specs" / f"{path.stem.removeprefix('sim-')}.json"
    assert "--spec data/specs/$s.json --seed 7" in README.read_text()
    metadata = open_dataset(path).metadata
    spec = load_spec(spec_path)
    assert metadata.ground_truth["seed"] == 7
    assert metadata.ground_truth["spec"] == json.loads(json.dumps(spec.to_json()))
    table, _ = simulate(spec, 7)
    assert content_sha256(table.sort_by(sort_keys("simulation"))) == metadata.pack["sha256"]


def test_every_spec_is_used() -> None:
    specs = {p.stem for p in (DATA / "specs").glob("*.json")}
    assert specs == {p.stem.removeprefix("sim-") for p in SIMULATIONS}
