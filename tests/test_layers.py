"""The package's layers: every import — at the top of a module or inside a function — goes from a
higher layer to a lower one (or within one layer), so that each folder can be read knowing only
the folders below it. The order is the layer map of docs/contributing.md."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "retrieval_gate"

# Lowest first. The surface is the package's top: api, pytest_plugin, and the cli folder (the
# ``gate`` command, one module per command group).
LAYERS = ("core", "formats", "scoring", "decide", "inputs", "gating", "report", "commands",
          "runner", "surface")


def layer_of(module: str) -> str:
    """The layer of a module named ``retrieval_gate.X...``: its first folder, else the surface."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "surface"


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of the package's own modules in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("retrieval_gate")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("retrieval_gate"):
            if node.module == "retrieval_gate":
                # `from retrieval_gate import __version__` reads the package's version only.
                found += [(node.lineno, f"retrieval_gate.{a.name}") for a in node.names
                          if a.name != "__version__"]
            else:
                found.append((node.lineno, node.module))
    return found


def test_every_import_goes_down_the_layers() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = "retrieval_gate." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        mine = LAYERS.index(layer_of(module))
        for line, imported in imports_of(path):
            if LAYERS.index(layer_of(imported)) > mine:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {layer_of(module)} imports "
                             f"{imported} ({layer_of(imported)})")
    assert wrong == []


def test_every_module_lives_in_a_layer_folder() -> None:
    """Only the surface (the library API, the command line, the pytest plugin) sits at the top."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "api.py", "pytest_plugin.py"]
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} \
        == set(LAYERS) - {"surface"} | {"cli"}


def test_the_check_finds_an_upward_import(tmp_path: Path) -> None:
    """The check can fail: a core module importing a report renderer is found."""
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from retrieval_gate.report.text import report_text\n")
    assert imports_of(module) == [(2, "retrieval_gate.report.text")]
    assert LAYERS.index(layer_of("retrieval_gate.report.text")) > LAYERS.index("core")
