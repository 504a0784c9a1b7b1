"""``gate init``: from a folder of queries, judgments and (optionally) a corpus to a gated
repository — a snapshot frozen from the files, a starter ``gate.toml`` and the GitHub workflow
— each step saying what it wrote and what to commit. Nothing is overwritten: when any target
exists, nothing is written at all. The three files land together or not at all: everything is
checked and staged first, then renamed into place; a failure on the way (a file where a folder
must be, a folder that cannot be written) removes what was placed and the folders made.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from retrieval_gate.commands.power_said import assumed
from retrieval_gate.core.errors import InputError
from retrieval_gate.decide.policy import GatePolicy
from retrieval_gate.decide.power import family_size
from retrieval_gate.formats.atomic import write_texts
from retrieval_gate.inputs.snapshot import freeze, load_test_set, manifest_text
from retrieval_gate.scoring.units import UnitChoice

WORKFLOW = Path(".github") / "workflows" / "retrieval-gate.yml"
_SAFE = re.compile(r"(?!/)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}")


@dataclass(frozen=True)
class Initialised:
    """What ``gate init`` wrote (paths), the next steps, and what the test set can certify,
    in words."""

    written: tuple[Path, ...]
    next_steps: tuple[str, ...]
    unit: UnitChoice
    power: tuple[str, ...] = ()  # what the test set can certify (power_said.assumed)


def initialise(queries: str | os.PathLike[str], qrels: str | os.PathLike[str], *,
               snapshot: str | os.PathLike[str] | None = None,
               corpus_file: str | os.PathLike[str] | None = None, unit: str | None = None,
               chunking_version: str | None = None,
               chunks_file: str | os.PathLike[str] | None = None,
               baseline: str = "baselines/main", candidate: str = "runs/candidate.trec",
               root: str | os.PathLike[str] = ".") -> Initialised:
    """Freeze ``snapshot`` (default: ``snapshot.json`` beside the queries) from the files —
    the evidence unit as :func:`~retrieval_gate.inputs.snapshot.freeze` chooses it, refused when the
    judgments look like chunk ids and no unit is given — and write ``gate.toml`` and the
    workflow under ``root``, all three or none; InputError (exit 2) naming every target that
    already exists, before anything is written; EnvironmentFault (exit 74) when the machine
    refuses a write or a folder."""
    base = Path(root)
    target = Path(snapshot) if snapshot else Path(queries).parent / "snapshot.json"
    _require_plain((("--baseline", baseline), ("--candidate", candidate),
                    ("--snapshot", _relative(target, base)),
                    *([("--chunking-version", chunking_version)] if chunking_version else []),
                    *([("--chunks", _relative(Path(chunks_file), base))] if chunks_file
                      else [])))
    if (unit == "chunk" or (unit is None and chunking_version)) and corpus_file and not chunks_file:
        raise InputError("--chunks", "is needed: chunk judgments with a pinned corpus place "
                         "each run's chunk ids in its documents by the judged chunking's chunk "
                         "table", "give the chunk table with --chunks FILE (or leave out "
                         "--corpus-file)")
    config, workflow = base / "gate.toml", base / WORKFLOW
    existing = [p for p in (target, config, workflow) if p.exists()]
    if existing:
        raise InputError(str(existing[0]), "exists already" + (
            f" (and {', '.join(map(str, existing[1:]))})" if len(existing) > 1 else ""),
            "gate init writes only new files: move them away, or edit them by hand")
    frozen = freeze(target, queries=queries, qrels=qrels, corpus_file=corpus_file, unit=unit,
                    chunking_version=chunking_version, chunks_file=chunks_file, write=False)
    snapshot_path = _relative(target, base)
    starter = GatePolicy()
    power = assumed(len(load_test_set(frozen).answerable),
                    [(gate.measure, gate.margin) for gate in starter.gates],
                    starter.alpha / family_size(starter))
    declare = ("" if frozen.unit != "chunk" else
               f" --chunking-version {chunking_version}" if chunks_file is None else
               f" --chunks {_relative(Path(chunks_file), base)} --chunking-version "
               f"{chunking_version}")
    write_texts([(target, manifest_text(frozen)),
                 (config, _config(snapshot_path, baseline, candidate, power)),
                 (workflow, _workflow(snapshot_path, baseline, candidate, declare))],
                folders=True)
    steps = (
        f"commit {target}, {config} and {workflow} (and the files the snapshot pins)",
        (f"run your retriever over every query of {frozen.source}'s query set, the run and its "
        f"manifest: gate run --snapshot {snapshot_path} --retriever MODULE:FUNCTION -o RUN "
        f"--system retriever=my-retriever{declare}"),
        (f"approve it as the baseline: gate baseline approve --candidate RUN --to {baseline} — "
        "and commit the folder"),
        (f"edit the REPLACE parts of {workflow} (your retriever's packages and its "
        f"MODULE:FUNCTION, which makes {candidate}); from then on, every pull request is gated"))
    assert frozen.unit_choice is not None
    return Initialised((target, config, workflow), steps, frozen.unit_choice, tuple(power))


def _require_plain(given: tuple[tuple[str, str], ...]) -> None:
    """InputError naming the first option whose value is not a plain name or relative path:
    each goes into the workflow's shell lines (and the paths into gate.toml)."""
    for option, value in given:
        if not _SAFE.fullmatch(value):
            what = "name" if option == "--chunking-version" else "relative path"
            raise InputError(option, f"'{value[:60]}' is not a plain {what} (letters, digits, "
                             ". _ - /)", f"use a plain {what}: it goes into the workflow's "
                             "shell lines" + (" and into gate.toml" if what != "name" else ""))


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def _config(snapshot: str, baseline: str, candidate: str, power: list[str]) -> str:
    """The starter configuration: the paths, the two default gates, and ``fail-on`` stated
    beside what the test set can certify (``power``)."""
    said = "".join(f"#   {line.strip()}\n" for line in power)
    return (f'# retrieval-gate: gate check reads this file (every key: the configuration reference of its documentation).\n'
            f'snapshot = "{snapshot}"\nbaseline = "{baseline}"\ncandidate = "{candidate}"\n\n'
            '# What this test set can certify (gate baseline approve measures the spread on the\n'
            f'# baseline):\n{said}'
            '# A smaller drop than the margin needs ends "inconclusive", which passes under\n'
            '# fail-on = "regression"; fail-on = "inconclusive" blocks it (and every change the\n'
            '# set cannot decide), as a wider margin would let it through on purpose.\n'
            'fail-on = "regression"\n\n'
            '[[gate]]\nmeasure = "Recall@10"\nmargin = 0.02\n\n'
            '[[gate]]\nmeasure = "nDCG@10"\nmargin = 0.02\n')


def _workflow(snapshot: str, baseline: str, candidate: str, declare: str) -> str:
    """The example workflow with this repository's paths; with chunk judgments, the run's
    description (once, for both jobs) ``declare``s the chunking the runs are made with, and
    its chunk table when one is given — as the baseline approved from it declares them."""
    text = resources.files("retrieval_gate").joinpath("templates/retrieval-gate.yml").read_text(
        encoding="utf-8")
    for old, new in (("eval/snapshot.json", snapshot), ("baselines/my-retriever", baseline),
                     ("runs/candidate.trec", candidate)):
        text = text.replace(old, new)
    return text.replace("--system retriever=my-retriever",
                        f"--system retriever=my-retriever{declare}")
