"""The gate's configuration: ``[tool.retrieval-gate]`` in ``pyproject.toml``, or the top level
of ``gate.toml``, validated against ``schemas/config.schema.json``.

Keys (all optional): ``snapshot``, ``baseline``, ``candidate`` (paths, relative to the file that
holds the configuration), ``gate`` (a list of ``{measure, margin}``), ``slices``, ``alpha``,
``resamples``, ``seed``, ``tie-band``, ``bootstrap``, ``regression-rule``, ``min-queries``,
``fail-on``. Without a file, a bare
``gate check`` looks for ``gate.toml``, then for a ``pyproject.toml`` with a
``[tool.retrieval-gate]`` table, in the current folder.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_gate import schema
from retrieval_gate.errors import InputError
from retrieval_gate.formats.source import read_text
from retrieval_gate.policy import GatedMeasure, GatePolicy

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


def load_config(path: str | os.PathLike[str]) -> GateConfig:
    """Read a ``gate.toml`` (the whole file) or a ``pyproject.toml`` (its
    ``[tool.retrieval-gate]`` table, which must exist)."""
    file = Path(path)
    document = _toml(file)
    if file.name == "pyproject.toml":
        table = document.get("tool", {}).get(_TABLE)
        if table is None:
            raise InputError(str(file), f"has no [tool.{_TABLE}] table",
                             f"add [tool.{_TABLE}] with the gate's settings, or use gate.toml")
        document = table
    return config_from_mapping(document, str(file), file.parent)


def find_config(folder: str | os.PathLike[str] = ".") -> GateConfig | None:
    """The configuration in ``folder``: ``gate.toml``, else a ``pyproject.toml`` with a
    ``[tool.retrieval-gate]`` table, else None."""
    here = Path(folder)
    if (here / "gate.toml").is_file():
        return load_config(here / "gate.toml")
    pyproject = here / "pyproject.toml"
    if pyproject.is_file() and _TABLE in _toml(pyproject).get("tool", {}):
        return load_config(pyproject)
    return None


def config_from_mapping(document: Any, source: str, base: Path) -> GateConfig:
    """Validate a configuration mapping (every schema error at once) and build it; paths are
    resolved against ``base``."""
    schema.validate(document, "config", source)
    defaults = GatePolicy()
    gates = tuple(GatedMeasure(g["measure"], float(g["margin"])) for g in document["gate"]) \
        if "gate" in document else defaults.gates
    policy = GatePolicy(
        gates=gates,
        slices=tuple(document.get("slices", defaults.slices)),
        alpha=float(document.get("alpha", defaults.alpha)),
        resamples=int(document.get("resamples", defaults.resamples)),
        seed=int(document.get("seed", defaults.seed)),
        tie_band=float(document.get("tie-band", defaults.tie_band)),
        bootstrap=document.get("bootstrap", defaults.bootstrap),
        regression_rule=document.get("regression-rule", defaults.regression_rule),
        min_queries=int(document.get("min-queries", defaults.min_queries)),
        fail_on=document.get("fail-on", defaults.fail_on),
    )
    paths = {key: base / document[key] if key in document else None
             for key in ("snapshot", "baseline", "candidate")}
    return GateConfig(source, policy, **paths)


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
                fail_on: str | None = None, folder: str | os.PathLike[str] = ".") -> GateInputs:
    """Combine options with the configuration (``config``, else the one :func:`find_config`
    finds in ``folder``): an option given wins over the file; a path missing from both is a
    usage error naming the option and the config key."""
    loaded = load_config(config) if config else find_config(folder)
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
    return GateInputs(**paths, policy=policy, config=found.source)


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
