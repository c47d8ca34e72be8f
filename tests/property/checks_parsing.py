"""Targets for the parsing layer: bounded JSON, bounded reads, envelopes, statements, local signatures."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from desktop_qualify.evidence_schemas import (
    IN_TOTO_PAYLOAD_TYPE,
    AggregateStatement,
    Code,
    JsonBounds,
    PlatformStatement,
    load_json,
    parse_envelope,
    parse_statement,
    read_bounded,
)
from desktop_qualify.qualify_trust._dsse import pae
from desktop_qualify.qualify_trust._envelope import verify_envelope
from desktop_qualify.qualify_trust._local import KeyringVerifier
from hypothesis import strategies as st

from .baselines import evidence_baseline, trust
from .json_inputs import json_bytes
from .mutations import apply_byte_ops, apply_json_ops, byte_ops, json_ops
from .oracle import ENVELOPE_CODES, JSON_CODES, STATEMENT_CODES, TRUST_CODES, expect, flatten, refused_or_returned
from .target import Target, decode_bytes, encode_bytes

# -- load_json ----------------------------------------------------------------------------------------------


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _reference(text: str) -> tuple[Any, bool] | None:
    """Python's own reading of ``text`` and whether an object repeats a key; None if it refuses the text."""
    duplicates = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicates
        duplicates = duplicates or len({k for k, _ in items}) != len(items)
        return dict(items)

    try:
        return json.loads(text, object_pairs_hook=pairs), duplicates
    except (ValueError, RecursionError):
        return None


def _nonfinite(value: Any) -> bool:
    return any(isinstance(node, float) and not math.isfinite(node) for node in flatten(value))


def check_load_json(value: dict[str, Any]) -> None:
    data: bytes = value["data"]
    given = {k: value[k] for k in ("max_bytes", "max_depth") if value.get(k) is not None}
    bounds = JsonBounds(**given)
    result, err = refused_or_returned("load_json", lambda: load_json(data, what="input", bounds=bounds), JSON_CODES)
    # The documented order: size first, then UTF-8, and each has its code whatever else is wrong.
    if len(data) > bounds.max_bytes:
        expect(err is not None and err.code is Code.EVIDENCE_TOO_LARGE, "load_json:size-not-checked-first",
               f"{len(data)} bytes over {bounds.max_bytes}: {err and err.code}")
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        expect(err is not None and err.code is Code.JSON_INVALID_UTF8, "load_json:utf8-not-checked", str(err))
        return
    reference = _reference(text)
    if err is None:
        expect(reference is not None, "load_json:accepted-what-json-refuses", repr(data[:200]))
        assert reference is not None
        expect(not _nonfinite(result), "load_json:nonfinite-returned", lambda: repr(data[:200]))
        expect(not reference[1], "load_json:duplicate-key-returned", repr(data[:200]))
        expect(_depth(result) <= bounds.max_depth, "load_json:too-deep-returned",
               f"depth {_depth(result)} > {bounds.max_depth}")
        expect(result == reference[0], "load_json:differs-from-json", repr(data[:200]))
        return
    clean = (reference is not None and not reference[1] and not _nonfinite(reference[0])
             and _depth(reference[0]) <= bounds.max_depth)
    expect(not clean, f"load_json:refused-valid-json:{err.code.value}", lambda: f"{data[:200]!r}: {err}")


def _load_json_inputs() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "data": json_bytes(),
        "max_bytes": st.one_of(st.none(), st.integers(0, 300)),
        "max_depth": st.one_of(st.none(), st.integers(0, 30)),
    })


def _encode_bounded(value: dict[str, Any]) -> dict[str, Any]:
    return {**encode_bytes(value["data"]), **{k: v for k, v in value.items() if k != "data"}}


def _decode_bounded(fields: dict[str, Any]) -> dict[str, Any]:
    rest = {k: v for k, v in fields.items() if k in ("max_bytes", "max_depth", "kind")}
    return {"data": decode_bytes(fields), **rest}


LOAD_JSON = Target("load_json", _load_json_inputs, check_load_json, _encode_bounded, _decode_bounded,
                   default_examples=100,
                   examples=({"data": b'{"a": [1, "two", null]}', "max_bytes": None, "max_depth": None},))

# -- read_bounded -------------------------------------------------------------------------------------------


def check_read_bounded(value: dict[str, Any]) -> None:
    data, limit, kind = value["data"], value["max_bytes"], value["kind"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.json"
        if kind == "file":
            path.write_bytes(data)
        elif kind == "directory":
            path.mkdir()
        result, err = refused_or_returned("read_bounded", lambda: read_bounded(path, max_bytes=limit))
    if kind == "missing":
        expect(err is not None and err.code is Code.EVIDENCE_MISSING, "read_bounded:missing-not-refused", str(err))
    elif kind == "directory":
        expect(err is not None and err.code is Code.EVIDENCE_UNEXPECTED, "read_bounded:directory-not-refused",
               str(err))
    elif len(data) > limit:
        expect(err is not None and err.code is Code.EVIDENCE_TOO_LARGE, "read_bounded:over-limit-not-refused",
               f"{len(data)} > {limit}: {err}")
    else:
        expect(result == data, "read_bounded:not-the-file's-bytes", f"{err}")


READ_BOUNDED = Target(
    "read_bounded",
    lambda: st.fixed_dictionaries({"data": st.binary(max_size=64), "max_bytes": st.integers(0, 70),
                                   "kind": st.sampled_from(["file", "file", "file", "missing", "directory"])}),
    check_read_bounded, _encode_bounded, _decode_bounded, default_examples=40)

# -- parse_envelope -----------------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _envelope_like() -> st.SearchStrategy[bytes]:
    """DSSE-shaped objects with each field valid, wrong, or absent."""
    baseline = evidence_baseline()
    keys = trust()
    payload = baseline.platform_statement
    good_sig = _b64(keys.keys["platform"].sign(pae(IN_TOTO_PAYLOAD_TYPE, payload)))
    odd: st.SearchStrategy[Any] = st.one_of(st.none(), st.integers(-1, 3), st.text(max_size=8), st.just([]),
                                            st.just({}))
    signature = st.fixed_dictionaries({}, optional={
        "keyid": st.one_of(st.sampled_from([keys.keyid("platform"), keys.keyid("aggregate"), keys.keyid("stranger"),
                                            "", "0" * 64, "A" * 64]), odd),
        "sig": st.one_of(st.sampled_from([good_sig, good_sig[:-4], good_sig + "==", "", "====", "QQ", "QQ==\n"]),
                         st.binary(max_size=80).map(_b64), odd),
        "extra": odd,
    })
    envelope = st.fixed_dictionaries({}, optional={
        "payloadType": st.one_of(st.sampled_from([IN_TOTO_PAYLOAD_TYPE, "application/json", ""]), odd),
        "payload": st.one_of(st.sampled_from([_b64(payload), _b64(payload)[:-1], _b64(payload).rstrip("="),
                                              base64.urlsafe_b64encode(payload).decode(), "", "not base64!"]),
                             st.binary(max_size=40).map(_b64), odd),
        "signatures": st.one_of(st.lists(signature, max_size=5), odd),
        "extra": odd,
    })
    return envelope.map(lambda e: json.dumps(e).encode())


def envelope_bytes() -> st.SearchStrategy[bytes]:
    envelopes = evidence_baseline().envelopes()
    mutated = st.tuples(st.sampled_from(envelopes), byte_ops()).map(lambda t: apply_byte_ops(*t))
    return st.one_of(st.sampled_from(envelopes), mutated, _envelope_like(), json_bytes())


def check_parse_envelope(data: bytes) -> None:
    envelope, _ = refused_or_returned("parse_envelope", lambda: parse_envelope(data, what="input"), ENVELOPE_CODES)
    if envelope is not None:
        raw = json.loads(data)
        expect(raw.get("payload") == envelope.payload and len(envelope.signatures) >= 1,
               "parse_envelope:result-differs-from-input", repr(data[:200]))


PARSE_ENVELOPE = Target("parse_envelope", envelope_bytes, check_parse_envelope, encode_bytes, decode_bytes,
                        default_examples=80)

# -- parse_statement ----------------------------------------------------------------------------------------


def statement_bytes() -> st.SearchStrategy[bytes]:
    baseline = evidence_baseline()
    documents = [json.loads(baseline.platform_statement), baseline.aggregate_data]

    def edited(document: dict[str, Any]) -> st.SearchStrategy[bytes]:
        def apply(ops: list[list[Any]]) -> bytes:
            copy = json.loads(json.dumps(document))
            apply_json_ops(copy, ops)
            return json.dumps(copy).encode()
        return json_ops(document).map(apply)

    originals = [baseline.platform_statement, baseline.aggregate_statement]
    return st.one_of(
        st.sampled_from(originals),
        *[edited(document) for document in documents],
        st.tuples(st.sampled_from(originals), byte_ops()).map(lambda t: apply_byte_ops(*t)),
        json_bytes(),
    )


def check_parse_statement(data: bytes) -> None:
    statement, _ = refused_or_returned("parse_statement", lambda: parse_statement(data, what="input"),
                                       STATEMENT_CODES)
    if statement is not None:
        expected = PlatformStatement if "platform-qualification" in statement.predicateType else AggregateStatement
        expect(isinstance(statement, expected) and json.loads(data)["predicateType"] == statement.predicateType,
               "parse_statement:model-does-not-match-predicate-type", statement.predicateType)


PARSE_STATEMENT = Target("parse_statement", statement_bytes, check_parse_statement, encode_bytes, decode_bytes,
                         default_examples=80)

# -- verify_envelope / KeyringVerifier ----------------------------------------------------------------------


def _independently_verified(data: bytes, role: str, payload: bytes) -> bool:
    """Without the code under test: is there a signature by a key trusted for ``role`` over these exact bytes?"""
    keyring = trust().keyring
    envelope = json.loads(data)
    try:
        if base64.b64decode(envelope["payload"], validate=True) != payload:
            return False
    except (binascii.Error, TypeError, ValueError):
        return False
    if envelope.get("payloadType") != IN_TOTO_PAYLOAD_TYPE:
        return False
    for signature in envelope["signatures"]:
        trusted = keyring.lookup(signature["keyid"])
        if trusted is None or role not in trusted.roles:
            continue
        try:
            trusted.public_key.verify(base64.b64decode(signature["sig"], validate=True),
                                      pae(IN_TOTO_PAYLOAD_TYPE, payload))
        except (binascii.Error, InvalidSignature, ValueError):
            continue
        return True
    return False


def check_verify_envelope(value: dict[str, Any]) -> None:
    data, role = value["data"], value["role"]
    keyring = trust().keyring
    direct, err = refused_or_returned("verify_envelope",
                                      lambda: verify_envelope(data, keyring, role=role, what="input"), TRUST_CODES)
    wrapped, err2 = refused_or_returned(
        "verify_statement", lambda: KeyringVerifier(keyring).verify_statement(data, role=role, what="input"),
        TRUST_CODES)
    expect((err is None) == (err2 is None) and (err is None or err2 is None or err.code is err2.code),
           "verify_envelope:verifiers-disagree", f"{err} / {err2}")
    if direct is not None and wrapped is not None:
        expect(_independently_verified(data, role, direct.payload), "verify_envelope:accepted-unverifiable",
               repr(data[:300]))
        expect(wrapped.payload == direct.payload
               and direct.envelope_sha256 == wrapped.envelope_sha256 == hashlib.sha256(data).hexdigest(),
               "verify_envelope:result-inconsistent")


VERIFY_ENVELOPE = Target(
    "verify_envelope",
    lambda: st.fixed_dictionaries({"data": envelope_bytes(), "role": st.sampled_from(["platform", "aggregate"])}),
    check_verify_envelope,
    lambda v: {**encode_bytes(v["data"]), "role": v["role"]},
    lambda f: {"data": decode_bytes(f), "role": f["role"]},
    default_examples=80)

TARGETS = (LOAD_JSON, READ_BOUNDED, PARSE_ENVELOPE, PARSE_STATEMENT, VERIFY_ENVELOPE)
