"""A small TOML writer for mutated policy data (the standard library reads TOML but does not write it).

Tables become ``[a.b]`` headers, every key is a quoted basic string, strings
use JSON's escapes (valid TOML escapes). TOML has no null: a None value is
left out, the same as deleting the key.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any


def to_toml(document: dict[str, Any]) -> str:
    lines: list[str] = []
    _table(lines, [], document)
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value if item is not None) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _table(lines: list[str], path: list[str], table: dict[str, Any]) -> None:
    if path:
        lines.append("[" + ".".join(_key(part) for part in path) + "]")
    for key, value in table.items():
        if value is not None and not isinstance(value, dict):
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in table.items():
        if isinstance(value, dict):
            _table(lines, [*path, key], value)
