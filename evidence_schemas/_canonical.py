"""Canonical JSON (RFC 8785) wherever bytes of JSON are signed or digested."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785
from pydantic import BaseModel


def canonical_bytes(value: BaseModel | Any) -> bytes:
    """RFC 8785 bytes of a model (by its JSON field names) or of plain JSON data."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, as lowercase hex."""
    return hashlib.sha256(data).hexdigest()
