"""A property target: inputs, the check, and how an input is written to and read from a corpus case."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis.strategies import SearchStrategy


@dataclass(frozen=True)
class Target:
    name: str
    # Built lazily: some strategies start from signed evidence made on first use.
    strategy: Callable[[], SearchStrategy[Any]]
    check: Callable[[Any], None]
    encode: Callable[[Any], dict[str, Any]]
    decode: Callable[[dict[str, Any]], Any]
    default_examples: int = 80
    examples: tuple[Any, ...] = ()  # always run first, e.g. the untouched input that must be accepted


def encode_bytes(value: bytes) -> dict[str, Any]:
    return {"input_b64": base64.b64encode(value).decode("ascii")}


def decode_bytes(fields: dict[str, Any]) -> bytes:
    return base64.b64decode(fields["input_b64"], validate=True)


def encode_recipe(value: dict[str, Any]) -> dict[str, Any]:
    return {"recipe": value}


def decode_recipe(fields: dict[str, Any]) -> dict[str, Any]:
    recipe: dict[str, Any] = fields["recipe"]
    return recipe
