"""Where gate budgets come from besides flags: `[tool.traceanalyze.gate]` in the nearest
`pyproject.toml` that has one (searched from a folder upward), or a TOML file named with
`--config`. The only module of `traceanalyze.gate` that reads files (bounded in size and nesting:
`traceanalyze.config_files`); the checks are in `budgets`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceanalyze import config_files
from traceanalyze.errors import ConfigError
from traceanalyze.gate.budgets import parse_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = ("tool", "traceanalyze", "gate")
TABLE_NAME = "[tool.traceanalyze.gate]"


@dataclass(frozen=True)
class GateConfig:
    """Checked values from a config file (`budgets.parse_table`), and where they came from."""

    values: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None


def _read_toml(path: Path) -> dict[str, Any]:
    text = config_files.read_text(path, "TOML file")
    config_files.check_nesting(text, path, "TOML file", comments=True)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:
        raise config_files.too_deep(path, "TOML file") from None


def _gate_table(document: dict[str, Any]) -> Any:
    node: Any = document
    for key in TABLE:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _checked(table: Any, path: Path, label: str) -> GateConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {label} must be a table")
    values = parse_table(table, source=f"{path} {label}")
    if "baseline" in values:  # relative to the file that names it
        baseline = Path(values["baseline"])
        values["baseline"] = str(baseline if baseline.is_absolute() else path.parent / baseline)
    return GateConfig(values=values, source=path)


def load_config_file(path: Path) -> GateConfig:
    """A file given with `--config`: its `[tool.traceanalyze.gate]` table if it has one (so a
    `pyproject.toml` works), else its top-level keys."""
    document = _read_toml(path)
    table = _gate_table(document)
    if table is not None:
        return _checked(table, path, TABLE_NAME)
    if path.name == "pyproject.toml":
        raise ConfigError(f"{path}: has no {TABLE_NAME} table")
    return _checked(document, path, "(top level)")


def find_pyproject_config(start: Path) -> GateConfig:
    """The `[tool.traceanalyze.gate]` table of the nearest `pyproject.toml` at `start` or above it
    that has one; empty when there is none. A `pyproject.toml` on the way that is not valid TOML is
    an error (it may well be the one meant)."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            table = _gate_table(_read_toml(candidate))
            if table is not None:
                return _checked(table, candidate, TABLE_NAME)
    return GateConfig()


def load_gate_config(config: Path | None, *, cwd: Path) -> GateConfig:
    """`--config FILE` when given, else the pyproject.toml search from `cwd`."""
    return load_config_file(config) if config is not None else find_pyproject_config(cwd)
