"""The gate's configuration: ``[tool.retrieval-gate]`` in ``pyproject.toml``, or the top level
of ``gate.toml``, validated against ``schemas/config.schema.json``.

Keys (all optional): ``snapshot``, ``baseline``, ``candidate`` (paths, relative to the file that
holds the configuration), ``gate`` (a list of ``{measure, margin}``), ``slices``, ``alpha``,
``resamples``, ``seed``, ``tie-band``, ``bootstrap``, ``regression-rule``, ``regression-test``, ``min-queries``,
``fail-on``, ``cost`` (a list of ``{metric, stat, max-increase | max, min-queries}``),
``leaks``, ``missing``, ``accept-cut-spans``. Without a file, a bare
``gate check`` looks for ``gate.toml``, then for a ``pyproject.toml`` with a
``[tool.retrieval-gate]`` table, in the current folder.

Errors name the file and the JSON path of the key at fault, from the top of the file (in
``pyproject.toml``: ``$["tool"]["retrieval-gate"]["alpha"]``). Besides what the schema says,
the configuration refuses what TOML can write but a setting cannot mean: NaN and infinite
numbers, dates and times, a path holding a NUL character, and nesting deeper than the parser
can follow.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_gate.core.errors import InputError, ManyErrors
from retrieval_gate.decide.policy import SCORE_PREFIX, CostGate, FailOn, GatedMeasure, GatePolicy
from retrieval_gate.formats import schema
from retrieval_gate.formats.jsonfmt import path as json_path
from retrieval_gate.formats.source import read_text

_TABLE = "retrieval-gate"


@dataclass(frozen=True)
class GateConfig:
    """A loaded configuration: the policy, and the input paths it names (resolved against the
    configuration file's folder; None when not given)."""

    source: str | None
    policy: GatePolicy
    snapshot: Path | None = None
    baseline: Path | None = None
    candidate: Path | None = None


def _toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), f"is not valid TOML ({exc})", "fix the TOML syntax") from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise InputError(str(path), "holds an integer of more than 4,300 digits",
                         "no setting needs more than a few digits: fix the value") from None
    except RecursionError as exc:
        raise InputError(str(path), "nests arrays or inline tables deeper than can be read",
                         "no setting nests them more than two levels deep: fix the value",
                         _deepest_key(exc)) from None


def _deepest_key(exc: RecursionError) -> str | None:
    """The JSON path of the key whose value nests too deeply, read from the TOML parser's frames
    (its ``key_value_rule`` holds the table header, ``parse_key_value_pair`` the key); None if
    the parser has no such frames."""
    header = key = None
    trace = exc.__traceback__
    while trace is not None and key is None:
        names = trace.tb_frame.f_locals
        if trace.tb_frame.f_code.co_name == "key_value_rule":
            header = names.get("header")
        elif trace.tb_frame.f_code.co_name == "parse_key_value_pair":
            key = names.get("key")
        trace = trace.tb_next
    if not isinstance(header, tuple) or not isinstance(key, tuple):
        return None
    return json_path(*header, *key)


def load_config(path: str | os.PathLike[str]) -> GateConfig:
    """Read a ``gate.toml`` (the whole file) or a ``pyproject.toml`` (its
    ``[tool.retrieval-gate]`` table, which must exist)."""
    file = Path(path)
    document = _toml(file)
    if file.name != "pyproject.toml":
        return config_from_mapping(document, str(file), file.parent)
    tool = document.get("tool")
    table = tool.get(_TABLE) if isinstance(tool, dict) else None
    for keys, value in ((("tool",), tool), (("tool", _TABLE), table)):
        if value is not None and not isinstance(value, dict):
            raise InputError(str(file), f"{_shown(value)} is not a table",
                             f"write the gate's settings under [tool.{_TABLE}]",
                             json_path(*keys))
    if table is not None:
        return config_from_mapping(table, str(file), file.parent, ("tool", _TABLE))
    raise InputError(str(file), f"has no [tool.{_TABLE}] table",
                     f"add [tool.{_TABLE}] with the gate's settings, or use gate.toml")


def find_config(folder: str | os.PathLike[str] = ".") -> GateConfig | None:
    """The configuration in ``folder``: ``gate.toml``, else a ``pyproject.toml`` with a
    ``[tool.retrieval-gate]`` table, else None. A ``pyproject.toml`` whose ``tool`` is not a
    table is an error (it may be meant to hold the gate's table)."""
    here = Path(folder)
    if (here / "gate.toml").is_file():
        return load_config(here / "gate.toml")
    pyproject = here / "pyproject.toml"
    if pyproject.is_file():
        tool = _toml(pyproject).get("tool", {})
        if not isinstance(tool, dict) or _TABLE in tool:
            return load_config(pyproject)
    return None


def config_from_mapping(document: Any, source: str, base: Path,
                        within: tuple[str, ...] = ()) -> GateConfig:
    """Validate a configuration mapping (every error at once) and build it; paths are resolved
    against ``base``. ``within`` is where the mapping lies in its file (for error paths)."""
    _require_valid(document, source, within)
    defaults = GatePolicy()
    gates = tuple(GatedMeasure(g["measure"], float(g["margin"]), g.get("slice"),
                               bool(g.get("report-only", False)), g.get("min-queries"),
                               bool(g.get("lower-is-better", False)))
                  for g in document["gate"]) if "gate" in document else defaults.gates
    costs = tuple(CostGate(c["metric"], c["stat"], _number(c.get("max-increase")),
                           _number(c.get("max")), c.get("min-queries"))
                  for c in document.get("cost", ()))
    twice = {g.name for g in costs if [c.name for c in costs].count(g.name) > 1}
    if twice:
        raise InputError(source, f"cost {min(twice)} is gated twice", "gate each cost "
                         "statistic once", json_path(*within, "cost"))
    policy = GatePolicy(
        gates=gates,
        slices=tuple(document.get("slices", defaults.slices)),
        costs=costs,
        leaks=document.get("leaks", defaults.leaks),
        alpha=float(document.get("alpha", defaults.alpha)),
        resamples=int(document.get("resamples", defaults.resamples)),
        seed=int(document.get("seed", defaults.seed)),
        tie_band=float(document.get("tie-band", defaults.tie_band)),
        bootstrap=document.get("bootstrap", defaults.bootstrap),
        regression_rule=document.get("regression-rule", defaults.regression_rule),
        regression_test=document.get("regression-test", defaults.regression_test),
        min_queries=int(document.get("min-queries", defaults.min_queries)),
        fail_on=document.get("fail-on", defaults.fail_on),
        missing=document.get("missing", defaults.missing),
        accept_cut_spans=bool(document.get("accept-cut-spans", defaults.accept_cut_spans)),
    )
    # normpath: baselines/x rather than examples/y/../../baselines/x in reports
    paths = {key: Path(os.path.normpath(base / document[key])) if key in document else None
             for key in _PATHS}
    return GateConfig(source, policy, **paths)


_PATHS = ("snapshot", "baseline", "candidate")


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _require_valid(document: Any, source: str, within: tuple[str, ...]) -> None:
    """ManyErrors listing every problem: first the values no setting takes (NaN, infinities,
    dates and times), else every schema error, else paths holding a NUL character."""
    found = _unusable_values(document, source, within)
    if not found:
        found = [InputError(source, e.problem, e.fix, json_path(*within) + str(e.where)[1:])
                 for e in schema.problems(document, "config", source)]
    if not found:
        found = [InputError(source, "holds a NUL character, which no file path can contain",
                            "remove it", json_path(*within, key))
                 for key in _PATHS if "\x00" in document.get(key, "")]
    if found:
        raise ManyErrors(found)


def _unusable_values(document: Any, source: str, within: tuple[str, ...]) -> list[InputError]:
    """NaN and infinite numbers, and TOML dates and times, anywhere in ``document``, in document
    order (walked without recursion: the document may nest deeply)."""
    found = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, within)]
    while stack:
        value, keys = stack.pop()
        if isinstance(value, dict):
            stack += reversed([(v, (*keys, k)) for k, v in value.items()])
        elif isinstance(value, list):
            stack += reversed([(v, (*keys, i)) for i, v in enumerate(value)])
        elif isinstance(value, float) and not math.isfinite(value):
            found.append(InputError(source, f"{value} is not a finite number",
                                    "write a finite number", json_path(*keys)))
        elif isinstance(value, (dt.date, dt.time)):
            found.append(InputError(source, f"{value.isoformat()} is a TOML date or time, which "
                                    "no setting takes", "write a path in quotes, a number "
                                    "without", json_path(*keys)))
    return found


def _shown(value: Any) -> str:
    """A short rendering of a TOML value for a message."""
    text = f'"{value}"' if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:59] + "…"


@dataclass(frozen=True)
class GateInputs:
    """What ``gate check`` runs on: the three paths, the policy, and where it came from."""

    snapshot: Path
    baseline: Path
    candidate: Path
    policy: GatePolicy
    config: str | None


def gate_inputs(snapshot: str | None = None, baseline: str | None = None,
                candidate: str | None = None, config: str | None = None,
                fail_on: FailOn | None = None, folder: str | os.PathLike[str] = ".",
                gates: tuple[GatedMeasure, ...] = (), no_config: bool = False) -> GateInputs:
    """Combine options with the configuration (``config``, else the one :func:`find_config`
    finds in ``folder``; none with ``no_config``): an option given wins over the file —
    ``gates`` replace the file's gates; a path missing from both is a usage error naming the
    option and the config key."""
    if no_config and config:
        raise InputError("--no-config", "and --config both given",
                         "give one: --config FILE, or --no-config for the defaults")
    loaded = None if no_config else load_config(config) if config else find_config(folder)
    found = loaded or GateConfig(None, GatePolicy())
    paths = {}
    for key, option in (("snapshot", snapshot), ("baseline", baseline),
                        ("candidate", candidate)):
        value = Path(option) if option else getattr(found, key)
        if value is None:
            raise _required(key, found.source)
        paths[key] = value
    policy = found.policy
    if fail_on:
        policy = dataclasses.replace(policy, fail_on=fail_on)
    if gates:
        policy = dataclasses.replace(policy, gates=_directed(gates, policy.gates))
    return GateInputs(**paths, policy=policy, config=found.source)


def _directed(given: tuple[GatedMeasure, ...], configured: tuple[GatedMeasure, ...]
              ) -> tuple[GatedMeasure, ...]:
    """Gates given as options, each score that the configuration marks ``lower-is-better``
    kept so: ``--gate score:hallucination=0.03`` cannot express the direction, and must not
    turn a harm's rise into an improvement."""
    harms = {g.measure for g in configured if g.lower_is_better}
    return tuple(dataclasses.replace(g, lower_is_better=True) if g.measure in harms else g
                 for g in given)


def snapshot_path(snapshot: str | None, folder: str | os.PathLike[str] = ".") -> Path:
    """``snapshot`` if given, else the one the configuration in ``folder`` names."""
    if snapshot:
        return Path(snapshot)
    found = find_config(folder)
    if found is None or found.snapshot is None:
        raise _required("snapshot", found.source if found else None)
    return found.snapshot


def _required(key: str, source: str | None) -> InputError:
    """The usage error for a path given neither as an option nor in the configuration."""
    where = source or f"gate.toml or [tool.{_TABLE}] of pyproject.toml"
    return InputError(f"--{key}", "is required",
                      f"pass --{key} PATH, or set {key} = \"PATH\" in {where}")


def harmful(gates: tuple[GatedMeasure, ...], harms: tuple[str, ...]) -> tuple[GatedMeasure, ...]:
    """``gates`` with the scores named in ``harms`` (``--lower-is-better score:NAME``) marked
    lower-is-better; InputError for a name that is not a score among ``gates``."""
    scores = {g.measure for g in gates if g.measure.startswith(SCORE_PREFIX)}
    for name in harms:
        if name not in scores:
            raise InputError("--lower-is-better", f"'{name[:60]}' is not a score gated with "
                             "--gate", "name a gated score, e.g. --gate "
                             "score:hallucination=0.03 --lower-is-better score:hallucination")
    return tuple(dataclasses.replace(g, lower_is_better=True) if g.measure in harms else g
                 for g in gates)


def parse_gate_option(text: str) -> GatedMeasure:
    """``MEASURE[:SLICE]=MARGIN`` (``--gate``) → a gate: ``Recall@10=0.02``,
    ``nDCG@10:paraphrase=0.05``, ``RR(rel=2)@10=0.03``, ``score:faithfulness=0.05``,
    ``score:correct:paraphrase=0.1``."""
    fix = ("write --gate MEASURE[:SLICE]=MARGIN, e.g. --gate Recall@10=0.02 or "
           "--gate nDCG@10:paraphrase=0.05")
    left, sep, margin_text = text.rpartition("=")
    try:
        margin = float(margin_text)
    except ValueError:
        margin = math.nan
    if not sep or not left or not math.isfinite(margin) or margin < 0:
        raise InputError("--gate", f"'{text[:60]}' is not MEASURE[:SLICE]=MARGIN with a margin "
                         "≥ 0", fix)
    score = left.startswith(SCORE_PREFIX)  # score:NAME[:SLICE]: the first colon is the name's
    measure, colon, slice_name = left.removeprefix(SCORE_PREFIX).rpartition(":")
    if score:
        measure = SCORE_PREFIX + measure if colon else ""
    if not colon or not slice_name or "]" in slice_name or ")" in slice_name:
        return GatedMeasure(left, margin)
    if not measure:
        raise InputError("--gate", f"'{text[:60]}' names no measure", fix)
    return GatedMeasure(measure, margin, slice_name)
