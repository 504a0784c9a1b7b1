"""MkDocs hook: write the pages under ``reference/`` from the code at build time.

Nothing under ``reference/`` is kept in the repository: each page is rendered here from what the
package itself reads — the click command tree (through mkdocs-click), the JSON schemas shipped
in ``retrieval_gate/schemas/``, the measure table ``scoring.measures.FAMILIES``, the exit codes
``core.errors.EXIT_CODES``, the names ``retrieval_gate`` exports (through mkdocstrings) and the
inputs and outputs of ``action.yml`` — so the reference cannot drift from the code.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

import retrieval_gate
from retrieval_gate.core import errors
from retrieval_gate.scoring import measures

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = Path(retrieval_gate.__file__).parent / "schemas"

# Page path → title, in the order of the reference's index.
PAGES = {
    "reference/cli.md": "Command line",
    "reference/config.md": "Configuration keys",
    "reference/measures.md": "Measures",
    "reference/report.md": "JSON report",
    "reference/schemas.md": "Snapshot and run-manifest schemas",
    "reference/exit-codes.md": "Exit codes",
    "reference/python-api.md": "Python API",
    "reference/action.md": "GitHub Action",
}


def cell(text: object) -> str:
    """``text`` as one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: tuple[str, ...], rows: Iterator[tuple[str, ...]] | list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def plain(doc: str | None) -> str:
    """A docstring as Markdown: ````x```` as `x`, a Sphinx role as its target (``:mod:`a.b```
    as `a.b`, ``:class:`~a.B``` as `B`)."""
    doc = re.sub(r":[a-z]+:`(~?)([\w.]+)`",
                 lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", doc or "")
    return doc.replace("``", "`")


def generated(origin: str) -> str:
    return f"*Generated at build time from {origin}.*\n"


# --- JSON schemas ------------------------------------------------------------------------------

def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``node`` with a local ``$ref`` (``#/$defs/NAME``) replaced by its target, merged."""
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return node
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    return {**_resolve(target, root), **{k: v for k, v in node.items() if k != "$ref"}}


def _kind(node: dict[str, Any]) -> str:
    """The type of a schema node, in words: its type(s), enum or const."""
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " | ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind:
        return str(kind)
    alternatives = node.get("oneOf") or node.get("anyOf") or []
    return " or ".join(dict.fromkeys(_kind(a) for a in alternatives if _kind(a))) or "any"


_BOUNDS = (("minimum", "≥ {}"), ("exclusiveMinimum", "> {}"), ("maximum", "≤ {}"),
           ("exclusiveMaximum", "< {}"), ("minLength", "length ≥ {}"),
           ("maxLength", "length ≤ {}"), ("minItems", "≥ {} items"), ("maxItems", "≤ {} items"),
           ("pattern", "matches `{}`"), ("default", "default `{}`"))


def _constraints(node: dict[str, Any]) -> str:
    return "; ".join(form.format(json.dumps(node[key]) if key == "default" else node[key])
                     for key, form in _BOUNDS if key in node)


def schema_rows(node: dict[str, Any], root: dict[str, Any], path: str = "",
                seen: tuple[str, ...] = ()) -> Iterator[tuple[str, str, str, str]]:
    """One row (key path, type, constraints, description) per key a document may hold.

    A list's items are written ``key[]``, the values of a mapping with free keys ``key.*``;
    properties of ``oneOf``/``anyOf`` alternatives and of ``if``/``then``/``else`` branches are
    listed as keys of the object that holds them. A ``$ref`` already followed on the way down is
    not followed again (a recursive definition ends there)."""
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return
        seen = (*seen, ref)
    node = _resolve(node, root)
    if path:
        yield (f"`{path}`", _kind(node), _constraints(node), node.get("description", ""))
    yield from _children(node, root, path, seen)


def _children(node: dict[str, Any], root: dict[str, Any], path: str,
              seen: tuple[str, ...]) -> Iterator[tuple[str, str, str, str]]:
    prefix = f"{path}." if path else ""
    listed: set[str] = set()
    for branch in (node, *(node.get("oneOf") or []), *(node.get("anyOf") or []),
                   *(node.get(k) for k in ("then", "else") if isinstance(node.get(k), dict))):
        branch = _resolve(branch, root)
        for key, sub in (branch.get("properties") or {}).items():
            if key not in listed:
                listed.add(key)
                yield from schema_rows(sub, root, prefix + key, seen)
        if branch is not node and branch.get("type") == "array" and "items" in branch:
            yield from _children(_resolve(branch["items"], root), root, f"{path}[]", seen)
    if isinstance(node.get("items"), dict):
        yield from _children(_resolve(node["items"], root), root, f"{path}[]", seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield from schema_rows(extra, root, prefix + "*", seen)


def schema_section(name: str, heading: str) -> str:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    rows = list(schema_rows(schema, schema))
    return "\n".join([
        heading, "", schema.get("description", ""), "",
        f"Schema `{schema['$id']}` (`gate schema {name}` prints it).", "",
        table(("key", "type", "constraints", "description"), rows), ""])


def config_page() -> str:
    return "\n".join([
        "# Configuration keys", "", generated("`retrieval_gate/schemas/config.schema.json`"),
        ("Keys of `gate.toml` (top level) or of `[tool.retrieval-gate]` in `pyproject.toml`; a "
        "key of a list of tables is written `key[].field`."), "",
        schema_section("config", "## Keys")])


def report_page() -> str:
    return "\n".join(["# JSON report", "", generated("`retrieval_gate/schemas/report.schema.json`"),
                      schema_section("report", "## Fields")])


def schemas_page() -> str:
    return "\n".join([
        "# Snapshot and run-manifest schemas", "",
        generated("`retrieval_gate/schemas/snapshot.schema.json` and "
                  "`run-manifest.schema.json`"),
        schema_section("snapshot", "## Snapshot"),
        schema_section("run-manifest", "## Run manifest")])


# --- measures, exit codes ----------------------------------------------------------------------

def _trec_eval(family: measures.Family) -> str:
    with_k, without_k = family.trec_eval
    names = [f"`{with_k.format(k='k')}`"] if with_k else []
    names += [f"without k `{without_k}`"] if without_k else []
    needs = f" (with `{family.trec_eval_needs}`)" if family.trec_eval_needs else ""
    return "; ".join(names) + needs if names else "—"


def measures_page() -> str:
    notation = plain(inspect.getdoc(measures))
    notation = notation[notation.index("Notation:"):]
    rows = [(f"`{f.name}`", ", ".join(f"`{a}`" for a in f.aliases) or "—", f.definition,
             ", ".join(f"`{p.syntax}`" for p in f.params),
             "lower" if f.lower_is_better else "higher", _trec_eval(f))
            for f in measures.FAMILIES]
    params = {p.syntax: p for f in measures.FAMILIES for p in f.params}
    return "\n".join([
        "# Measures", "", generated("`retrieval_gate.scoring.measures.FAMILIES`"),
        ("A measure is written `Name[(param=value,...)][@k] [stage]`, e.g. `nDCG@10`, "
        "`RR(rel=2)@10`, `Recall@50 [candidates]`; names are case-insensitive."), "",
        notation, "",
        "## Families", "",
        table(("family", "aliases", "definition", "parameters", "better", "trec_eval"), rows), "",
        "## Parameters", "",
        table(("parameter", "values", "meaning", "when left out"),
              [(f"`{p.syntax}`", p.values, p.description, p.default_text or "required")
               for p in params.values()]), ""])


def exit_codes_page() -> str:
    doc = plain(inspect.getdoc(errors)).split("\n\n", 1)[-1]
    return "\n".join([
        "# Exit codes", "", generated("`retrieval_gate.core.errors.EXIT_CODES`"), doc, "",
        table(("code", "meaning"), [(str(code), meaning) for code, meaning in errors.EXIT_CODES]),
        ""])


# --- command line, Python API, Action ----------------------------------------------------------

def cli_page() -> str:
    return "\n".join([
        "# Command line", "", generated("the click commands of `retrieval_gate.cli`"),
        "::: mkdocs-click", "    :module: retrieval_gate.cli", "    :command: cli",
        "    :prog_name: gate", "    :style: table", "    :depth: 1", "    :list_subcommands: true",
        ""])


def python_api_page() -> str:
    blocks = [f"::: retrieval_gate.{name}\n" for name in retrieval_gate.__all__]
    return "\n".join([
        "# Python API", "", generated("the names `retrieval_gate` exports (`__all__`)"),
        plain(inspect.getdoc(retrieval_gate)), "",
        "The names below are typed (`py.typed`); every other module is internal.", "",
        *blocks])


def action_page() -> str:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    inputs = [(f"`{name}`", spec.get("description", ""),
               f"`{spec['default']}`" if spec.get("default") not in (None, "") else "empty")
              for name, spec in action["inputs"].items()]
    outputs = [(f"`{name}`", spec.get("description", "")) for name, spec in
               action["outputs"].items()]
    return "\n".join([
        "# GitHub Action", "", generated("`action.yml`"), action["description"], "",
        "## Inputs", "", table(("input", "meaning", "default"), inputs), "",
        "## Outputs", "", table(("output", "meaning"), outputs), ""])


def index_page() -> str:
    return "\n".join([
        "# Reference", "",
        "Every page here is generated from the code when the site is built:", "",
        *(f"- [{title}]({Path(page).name})" for page, title in PAGES.items()), ""])


RENDER = {
    "reference/index.md": index_page,
    "reference/cli.md": cli_page,
    "reference/config.md": config_page,
    "reference/measures.md": measures_page,
    "reference/report.md": report_page,
    "reference/schemas.md": schemas_page,
    "reference/exit-codes.md": exit_codes_page,
    "reference/python-api.md": python_api_page,
    "reference/action.md": action_page,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages to the site's files."""
    for page, render in RENDER.items():
        files.append(File.generated(config, page, content=render()))
    return files


# click 8.2 and later mark an option without a default with a sentinel, which mkdocs-click
# (0.9) prints as it is; the reference shows an empty cell instead.
_UNSET = "<td><code>Sentinel.UNSET</code></td>"


def on_page_content(html: str, page: Any, config: MkDocsConfig, files: Files) -> str:
    """The command-line page without click's "no default" sentinel in its Default column."""
    return html.replace(_UNSET, "<td></td>") if _UNSET in html else html
