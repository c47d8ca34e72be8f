"""Bounds on every untrusted document, in one place (python-tuf's config habit).

Sizes are checked on raw bytes before any parsing; the rest are enforced by the
bounded loader and by the pydantic field constraints that use these values.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_STATEMENT_BYTES = 1024 * 1024
# A Sigstore bundle of one statement (certificate chain, log proofs and the DSSE envelope), read or fetched.
MAX_SIGSTORE_BUNDLE_BYTES = 24 * 1024 * 1024
MAX_POLICY_BYTES = 64 * 1024
MAX_KEYRING_BYTES = 64 * 1024
MAX_APP_OUTPUT_BYTES = 64 * 1024
MAX_DEPTH = 24
MAX_STRING = 4096
MAX_SHORT_STRING = 256
MAX_LIST = 256
# An audit report's runs: an auditor checks a release history (1,000 bundles in one call is the benchmark).
MAX_AUDIT_RUNS = 10_000
MAX_EXCERPT = 2000
MAX_BUNDLE_TEXT = 64 * 1024


@dataclass(frozen=True)
class JsonBounds:
    """Limits applied by :func:`evidence_schemas.load_json`."""

    max_bytes: int = MAX_STATEMENT_BYTES
    max_depth: int = MAX_DEPTH
