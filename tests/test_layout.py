"""The plan of the house, guarded: one package per feature, faces only, no cycles, a CLI that starts at once.

Rules (README "Layout"):

* ``analysis/jitterscope`` holds at most 18 entries, each listed in the README's layout block;
* a compute package and every compute module in it load no matplotlib (views do: ``plots``, ``pdf``,
  ``pages``, ``style`` and the ``report`` package);
* packages use each other only through their faces (``from jitterscope.power import X``, never
  ``from jitterscope.power.correlate import X``), and no ``_private`` name crosses a package;
* the module import graph (module-level imports, faces resolved to the module that defines the name)
  has no cycle;
* ``jitterscope --version``, ``--help`` and ``X --help`` for every X import none of numpy, pandas,
  pyarrow, scipy, matplotlib, astropy.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "analysis" / "jitterscope"
HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "matplotlib", "astropy")
VIEW_MODULES = {"plots", "pdf", "pages", "style"}
VIEW_PACKAGES = {"report", "cli"}
ROOT_MODULES = {"errors", "format"}


def _entries() -> list[str]:
    # __main__.py (python -m jitterscope) is no feature, like __init__.py it is how the package is entered
    return sorted(p.name for p in PACKAGE.iterdir() if p.name not in ("__pycache__", "__main__.py"))


def _packages() -> list[str]:
    return [p.name for p in sorted(PACKAGE.iterdir()) if (p / "__init__.py").exists()]


def _modules() -> dict[str, Path]:
    """Dotted name (below jitterscope) -> file, for every module of the package."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The dotted module (below jitterscope, '' for the root) that ``node`` imports from."""
    if node.level == 0:
        name = node.module or ""
        return name[len("jitterscope."):] if name.startswith("jitterscope.") else ("" if name == "jitterscope" else
                                                                                    "<outside>")
    base = module.split(".") if module else []
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, *(node.module.split(".") if node.module else [])])


def _face_map(package: str) -> dict[str, str]:
    """Name -> submodule (dotted, below jitterscope) of a lazy face, read from its ``submod_attrs``."""
    init = PACKAGE / package / "__init__.py"
    tree = ast.parse(init.read_text())
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "submod_attrs" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                for elt in value.elts:  # type: ignore[attr-defined]
                    names[elt.value] = f"{package}.{key.value}"  # type: ignore[union-attr]
        if isinstance(node, ast.keyword) and node.arg == "submodules" and isinstance(node.value, ast.List):
            for elt in node.value.elts:
                names[elt.value] = f"{package}.{elt.value}"  # type: ignore[attr-defined]
    return names


def _imports(top_level_only: bool) -> list[tuple[str, str, ast.ImportFrom]]:
    """(importing module, imported module, node) for every import from inside jitterscope."""
    found = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text())
        nodes = tree.body if top_level_only else list(ast.walk(tree))
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                if target != "<outside>":
                    found.append((module, target, node))
    return found


def _feature(module: str) -> str:
    return module.split(".")[0] if module else ""


def test_at_most_18_entries_each_in_the_readme() -> None:
    entries = _entries()
    assert len(entries) <= 18, entries
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("```")[1]
    for entry in entries:
        if entry != "__init__.py":
            assert re.search(rf"^\s+{re.escape(entry.removesuffix('.py'))}[/ .]", layout, re.M), \
                f"{entry} is not in the README's layout block"


def test_no_private_name_and_no_submodule_across_packages() -> None:
    broken = []
    for importer, target, node in _imports(top_level_only=False):
        if _feature(importer) == _feature(target) or _feature(target) in ROOT_MODULES or target == "":
            continue
        if "." in target:
            broken.append(f"{importer} imports {target} (use the face jitterscope.{_feature(target)})")
        for alias in node.names:
            if alias.name.startswith("_"):
                broken.append(f"{importer} imports the private {alias.name} from {target}")
    assert not broken, "\n".join(broken)


def test_every_face_name_resolves() -> None:
    """A lazy face fails only when a name is used: resolve every name of every face once, here."""
    packages = [p for p in _packages() if p != "cli"]
    code = ("import importlib\nbad = []\n"
            f"for package in {packages!r}:\n"
            "    face = importlib.import_module('jitterscope.' + package)\n"
            "    for name in face.__all__:\n"
            "        try:\n"
            "            getattr(face, name)\n"
            "        except Exception as exc:\n"
            "            bad.append(f'jitterscope.{package}.{name}: {exc!r}')\n"
            "print('\\n'.join(bad))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert not done.stdout.strip(), done.stdout


def test_the_module_graph_has_no_cycle() -> None:
    faces = {package: _face_map(package) for package in _packages()}
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for importer, target, node in _imports(top_level_only=True):
        package = _feature(target)
        if target == package and package in faces and not (importer + ".").startswith(package + "."):
            for alias in node.names:  # through a face: the edge goes to the module that defines the name
                graph[importer].add(faces[package].get(alias.name, target))
        elif target in modules:
            graph[importer].add(target)
            for alias in node.names:  # `from . import gpd`: a submodule
                if f"{target}.{alias.name}" in modules:
                    graph[importer].add(f"{target}.{alias.name}" if target else alias.name)
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(graph.get(module, ())):
            if nxt == module:
                continue
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt):], nxt] if nxt in path else [*path, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if state.get(nxt) is None:
                visit(nxt, [*path, nxt])
        state[module] = 2

    for module in sorted(modules):
        if state.get(module) is None:
            visit(module, [module])


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compute_modules(package: str) -> list[str]:
    return sorted(m for m in _modules() if _feature(m) == package and m.rsplit(".", 1)[-1] not in VIEW_MODULES)


@pytest.mark.parametrize("package", [p for p in _packages() if p not in VIEW_PACKAGES | {"render"}])
def test_a_compute_package_loads_no_matplotlib(package: str) -> None:
    imports = "\n".join(f"import jitterscope.{m}" for m in _compute_modules(package))
    assert "matplotlib" not in _loaded_after(imports), f"jitterscope.{package}'s compute modules load matplotlib"


def test_the_render_table_writers_load_no_matplotlib() -> None:
    assert "matplotlib" not in _loaded_after("import jitterscope.render.table\nimport jitterscope.format")


def _commands() -> list[str]:
    source = (PACKAGE / "cli" / "__init__.py").read_text()
    block = source.split("COMMANDS: tuple[str, ...] = (", 1)[1].split(")", 1)[0]
    modules = re.findall(r'"(\w+)"', block)
    names = []
    for module in modules:
        text = (PACKAGE / "cli" / f"{module}.py").read_text()
        names.append(re.search(r'add_parser\(\s*"([\w-]+)"', text)[1])  # type: ignore[index]
    return names


@pytest.mark.parametrize("argv", [["--version"], ["--help"], *([name, "--help"] for name in _commands())],
                         ids=lambda argv: " ".join(argv))
def test_the_cli_answers_without_the_heavy_libraries(argv: list[str]) -> None:
    code = f"from jitterscope.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert _loaded_after(code) == [], f"jitterscope {' '.join(argv)} imports heavy libraries"


def test_every_subcommand_is_guarded() -> None:
    names = _commands()
    assert {"summary", "power", "spectrum", "tails", "compare", "report", "import", "capture"} <= set(names)


def test_summary_of_a_dataset_loads_only_what_it_computes_with(tmp_path) -> None:
    # the fixed cost of every summary (issue 25): no pandas, scipy, matplotlib, astropy, nor tqdm without a bar
    from jitterscope.io import SimulationSpec, write_simulation

    path = write_simulation(SimulationSpec(threads=2, samples=2_000), tmp_path / "s.parquet", 1)
    unwanted = ("pandas", "scipy", "matplotlib", "astropy", "tqdm", "arrow")
    probe = (f"import sys, contextlib, io\nfrom jitterscope.cli import main\n"
             f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['summary', {str(path)!r}]) == 0\n"
             f"print(sorted(m for m in {unwanted!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
