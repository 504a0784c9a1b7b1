"""What the tests of the library adapters share (``tests/test_run_langchain.py``,
``test_run_llamaindex.py``, ``test_run_haystack.py``; they need the ``runners`` extra): the
recipe's commands for each example retriever of ``examples/pydoc/retrievers/``, run as written,
how much of the shipped BM25 run's top 10 a run shares, and a library call on a small snapshot."""

from __future__ import annotations

import json
import re
import shlex
from importlib import metadata
from itertools import pairwise
from pathlib import Path

import retrieval_gate
from tests.conftest import ROOT, gate

RECIPE = ROOT / "docs" / "recipes" / "run-your-retriever.md"
SHIPPED = ROOT / "baselines" / "pydoc" / "bm25-300.trec"
PYDOC_SNAPSHOT = ROOT / "examples" / "pydoc" / "snapshot.json"
SKIP = ("the runners extra is not installed (pip install -e '.[runners]', on Python 3.11 "
        "or later)")
_SH_BLOCK = re.compile(r"^```sh[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


def recipe_excerpt(target: str) -> str:
    """The ``python`` block of the recipe's section that runs ``target``: an excerpt of the
    target's module, which the section quotes."""
    text = RECIPE.read_text(encoding="utf-8")
    section = text[:text.index(f"--retriever {target}")].rpartition("\n#### ")[2]
    (excerpt,) = _PYTHON_BLOCK.findall(section)
    return excerpt


def recipe_commands(target: str) -> list[tuple[list[str], int]]:
    """The ``gate`` commands of the recipe's ``sh`` block that names ``target`` (continued
    lines joined), each with the exit code its ``# exit N`` comment states (else 0)."""
    blocks = [b for b in _SH_BLOCK.findall(RECIPE.read_text(encoding="utf-8"))
              if f"--retriever {target}" in b]
    assert len(blocks) == 1, f"the recipe has {len(blocks)} blocks running {target}"
    commands = []
    for line in blocks[0].replace("\\\n", " ").splitlines():
        assert line.startswith("gate "), f"not a gate command: {line}"
        found = _EXIT.search(line)
        commands.append((shlex.split(_EXIT.sub("", line))[1:], int(found[1]) if found else 0))
    return commands


def run_recipe(target: str, folder: Path) -> Path:
    """Run the recipe's commands for ``target`` from the repository root (the current folder
    must be it), ``$TMP`` standing for ``folder``; each must exit with the code the recipe
    states. Returns the run ``gate run`` wrote, after checking that ``gate validate`` accepts
    it, and that the code the recipe quotes is the module's."""
    module = ROOT / (target.partition(":")[0].replace(".", "/") + ".py")
    assert recipe_excerpt(target) in module.read_text(encoding="utf-8")
    run = None
    for args, expected in recipe_commands(target):
        args = [a.replace("$TMP", str(folder)) for a in args]
        code, out, err = gate(*args)
        assert code == expected, f"gate {' '.join(args)}: exit {code}\n{out}{err}"
        if args[0] == "run":
            run = Path(args[args.index("-o") + 1])
    assert run is not None
    code, out, err = gate("validate", PYDOC_SNAPSHOT, run)
    assert code == 0, out + err
    return run


def run(retriever: object, folder: Path, output: str = "run.jsonl", **options: object) -> Path:
    """``retrieval_gate.run`` of ``retriever`` on the snapshot in ``folder``, into ``output``
    there."""
    return retrieval_gate.run(retriever, snapshot=folder / "snapshot.json",
                              output=folder / output, commit="none", **options)


def runner_of(run: Path) -> dict:
    """The ``provenance.runner`` of the run's manifest."""
    manifest = json.loads(Path(f"{run}.manifest.json").read_text(encoding="utf-8"))
    return manifest["provenance"]["runner"]


def library(name: str) -> dict[str, str]:
    """The manifest's record of an installed library: its name and version."""
    return {"name": name, "version": metadata.version(name)}


def agreement(run: Path, k: int = 10, scores: dict[str, dict[str, float]] | None = None
              ) -> tuple[int, int]:
    """How the run's top ``k`` agrees with the shipped run's over every query: the chunks
    both hold (summed over the queries), and the queries whose top ``k`` is the same list.
    Each ranking is read as the gate reads a run — by score, ties by id — so that the order
    in which a library leaves tied chunks (numpy's unstable sort, which differs between
    machines) does not count. ``scores``: for a run written without its scores (LangChain's
    hits carry none: 1/rank), each query's score of every chunk, from the library; the run's
    ranking must then be an order of those scores (checked), and its top ``k`` is the first
    ``k`` of every chunk by score, ties by id."""
    mine, shipped = ranked_ids(run, scores), shipped_ids()
    assert mine.keys() == shipped.keys()
    shared = sum(len(set(mine[q][:k]) & set(shipped[q][:k])) for q in shipped)
    same = sum(mine[q][:k] == shipped[q][:k] for q in shipped)
    return shared, same


def ranked_ids(run: Path, scores: dict[str, dict[str, float]] | None = None
               ) -> dict[str, list[str]]:
    """Each query's ids of a JSON Lines run, by score (its own to 6 decimals, as TREC keeps
    them, or ``scores``' — see :func:`agreement`), ties by id."""
    ranked = {}
    for line in map(json.loads, run.read_text(encoding="utf-8").splitlines()):
        qid, ids = line["query_id"], [item["id"] for item in line["items"]]
        if scores is None:
            given = {item["id"]: round(item["score"], 6) for item in line["items"]}
            ranked[qid] = sorted(ids, key=lambda i: (-given[i], i))
            continue
        mine = scores[qid]
        assert all(mine[a] >= mine[b] for a, b in pairwise(ids)), qid  # in score order
        assert all(mine[c] <= mine[ids[-1]] for c in mine if c not in ids), qid  # the top
        ranked[qid] = sorted(mine, key=lambda i: (-mine[i], i))[:len(ids)]
    return ranked


def shipped_ids() -> dict[str, list[str]]:
    """Each query's chunk ids in the shipped bm25s run, by score, ties by id."""
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in SHIPPED.read_text(encoding="utf-8").splitlines():
        query, _, chunk, _, score, _ = line.split()
        ranked.setdefault(query, []).append((-float(score), chunk))
    return {query: [chunk for _, chunk in sorted(pairs)] for query, pairs in ranked.items()}


def pydoc_texts() -> dict[str, str]:
    """The pydoc corpus: each document's text by id, in file order."""
    return {d["id"]: d["text"] for d in map(json.loads, (ROOT / "examples" / "pydoc" /
                                                         "corpus.jsonl").open(encoding="utf-8"))}


def located(chunks: list[dict], folder: Path) -> list[dict]:
    """``gate chunks locate`` of ``chunks`` (id, doc_id, text) in the pydoc corpus: the table
    it writes."""
    table = folder / "text.jsonl"
    table.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    code, _, err = gate("chunks", "locate", "--chunks", table, "--corpus",
                        ROOT / "examples" / "pydoc" / "corpus.jsonl", "-o", folder / "t.jsonl")
    assert code == 0, err
    return [json.loads(line) for line in (folder / "t.jsonl").read_text().splitlines()]

