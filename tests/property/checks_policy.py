"""Targets for the policy loader: arbitrary bytes, and committed policies mutated as bytes or as TOML data."""

from __future__ import annotations

import hashlib
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import PLATFORMS
from desktop_qualify.qualify_policy import load_policy
from hypothesis import strategies as st

from .baselines import evidence_baseline, policy_files
from .mutations import apply_byte_ops, apply_json_ops, byte_ops, json_ops
from .oracle import expect, refused_or_returned
from .target import Target, decode_bytes, encode_bytes
from .toml_text import to_toml


def mutate_policy(base: bytes, recipe: dict[str, Any]) -> bytes:
    """``recipe`` is ``{"bytes": ops}`` or ``{"toml": ops}`` (JSON operations on the parsed policy)."""
    if "toml" in recipe:
        document = tomllib.loads(base.decode("utf-8"))
        apply_json_ops(document, recipe["toml"])
        return to_toml(document).encode("utf-8", "surrogatepass")
    return apply_byte_ops(base, recipe["bytes"])


def policy_recipes(base: bytes) -> st.SearchStrategy[dict[str, Any]]:
    document = tomllib.loads(base.decode("utf-8"))
    return st.one_of(json_ops(document).map(lambda ops: {"toml": ops}),
                     byte_ops().map(lambda ops: {"bytes": ops}))


def _mutated(base: bytes) -> st.SearchStrategy[bytes]:
    return policy_recipes(base).map(lambda recipe: mutate_policy(base, recipe))


def _policy_bytes() -> st.SearchStrategy[bytes]:
    bases = [*policy_files(), evidence_baseline().policy]
    # One strategy per base, built once: the paths of a large policy are not recomputed per example.
    mutated = st.one_of(*[_mutated(base) for base in bases])
    toml_like = st.text(alphabet=st.sampled_from('[]{}="., \n#abkvtrue01-_'), max_size=80).map(str.encode)
    return st.one_of(st.sampled_from(bases), mutated, mutated, toml_like, st.binary(max_size=64))


def check_load_policy(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.toml"
        path.write_bytes(data)
        policy, err = refused_or_returned("load_policy", lambda: load_policy(path))
    if err is not None:
        # A bad policy is the caller's error (exit 2), never a verdict on evidence (exit 1).
        expect(err.exit_status == 2, f"load_policy:refusal-not-exit-2:{err.code.value}", err.diagnostics()[:300])
        return
    assert policy is not None
    expect(policy.sha256 == hashlib.sha256(data).hexdigest(), "load_policy:sha256-not-of-the-file")
    required = list(policy.required_platforms)
    expect(bool(required) and len(set(required)) == len(required) and set(required) <= set(PLATFORMS),
           "load_policy:required-platforms-invalid", repr(required))


LOAD_POLICY = Target("load_policy", _policy_bytes, check_load_policy, encode_bytes, decode_bytes,
                     default_examples=80, examples=tuple(policy_files()[:1]))

TARGETS = (LOAD_POLICY,)
