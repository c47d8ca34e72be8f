"""DSSE pre-authentication encoding (DSSE v1 protocol, "PAE")."""

from __future__ import annotations


def pae(payload_type: str, payload: bytes) -> bytes:
    """``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body``, lengths in ASCII decimal."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)
