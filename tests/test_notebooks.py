"""The notebooks run clean, top to bottom, on data/ (issue 7, Must show 4).

Each notebook is executed with nbclient in a temporary copy of ``notebooks/``
next to a link to ``data/`` (the notebooks read ``../data``), so no output is
ever written into the repository; a cell that raises fails the test with the
cell's error.  The notebooks are committed without outputs, which is checked
here too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120


def test_the_three_notebooks_exist() -> None:
    assert [p.name for p in NOTEBOOKS] == ["01-quickstart.ipynb", "02-post-mortem.ipynb", "03-paper-figures.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, "a notebook without code"
    assert all(not cell.outputs and cell.execution_count is None for cell in code), (
        f"{path.name} has outputs; clear them with 'jupyter nbconvert --clear-output --inplace {path.name}'"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_clean(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy2(path, work / path.name)
    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # what the notebooks write to temporary directories stays here
    notebook = nbformat.read(work / path.name, as_version=4)
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name}: a cell failed:\n{exc}", pytrace=False)
    errors = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs
              if out.get("output_type") == "error"]
    assert not errors
    assert os.listdir(work) == [path.name], "a notebook wrote files next to itself"
