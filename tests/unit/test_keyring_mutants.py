"""The keyring file, exactly: the layout ``add_to_keyring`` writes and the words of each refusal ``Keyring.load`` gives.

A keyring is reviewed by people: it is written sorted and indented so that a diff shows only the key that changed,
and each refusal names the keyring file, the key at fault (by name, or by the first 16 digits of its key id) and,
for a file that cannot be read, the command that creates one. These tests hold the written text to its layout and
each refusal to its code, message and hint, at the nesting bound's exact edge and on the second entry of a keyring,
not only the first. Written for the mutants of ``qualify_trust._keyring`` that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust import Keyring, add_to_keyring
from desktop_qualify.qualify_trust._keys import keyid_of

KEYGEN_HINT = "run 'qualify keygen --policy FILE' to create local keys"


def _public(seed: int) -> Ed25519PublicKey:
    """A fixed public key: the same bytes on every run."""
    return Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32).public_key()


def _b64(key: Ed25519PublicKey) -> str:
    return base64.b64encode(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()


def _entry(key: Ed25519PublicKey, name: str, **changes: Any) -> dict[str, Any]:
    return {"keyid": keyid_of(key), "name": name, "public_key": _b64(key), "roles": ["platform"], **changes}


def _refusal(path: Path, text: str | None) -> QualificationError:
    """The error ``Keyring.load`` raises for a keyring file holding ``text`` (None: no file at all)."""
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(QualificationError) as caught:
        Keyring.load(path)
    assert caught.value.code is Code.KEY_INVALID
    return caught.value


def _nested(depth: int) -> str:
    """A keyring document whose JSON nesting depth is exactly ``depth`` (the object itself is level 1)."""
    return '{"version": 1, "keys": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


# -- the written file --------------------------------------------------------------------------------------


def test_a_written_keyring_is_sorted_and_indented_by_two_spaces(tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    key = _public(1)
    assert add_to_keyring(ring, "local-platform", key, ["platform", "aggregate"]) == keyid_of(key)
    assert ring.read_text(encoding="utf-8") == (
        "{\n"
        '  "keys": [\n'
        "    {\n"
        f'      "keyid": "{keyid_of(key)}",\n'
        '      "name": "local-platform",\n'
        f'      "public_key": "{_b64(key)}",\n'
        '      "roles": [\n'
        '        "aggregate",\n'
        '        "platform"\n'
        "      ]\n"
        "    }\n"
        "  ],\n"
        '  "version": 1\n'
        "}\n"
    )


def test_a_keyring_rewritten_with_a_second_key_keeps_the_same_layout(tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    first, second = _public(1), _public(2)
    add_to_keyring(ring, "local-platform", first, ["platform"])
    add_to_keyring(ring, "local-aggregate", second, ["aggregate"])
    expected = {"version": 1, "keys": [_entry(first, "local-platform"),
                                       _entry(second, "local-aggregate", roles=["aggregate"])]}
    text = ring.read_text(encoding="utf-8")
    assert text == json.dumps(expected, indent=2, sort_keys=True) + "\n"
    assert text.startswith('{\n  "keys": [\n    {\n      "keyid": ')
    assert text.endswith('  ],\n  "version": 1\n}\n')


# -- refusals: the file itself -----------------------------------------------------------------------------


def test_a_missing_keyring_names_the_keyring_and_says_how_to_create_keys(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    error = _refusal(path, None)
    assert error.message == f"keyring {path}: file not found"
    assert error.hint == KEYGEN_HINT
    assert error.diagnostics() == f"QE_KEY_INVALID: keyring {path}: file not found\n  hint: {KEYGEN_HINT}"


def test_a_keyring_that_is_not_json_is_refused_naming_the_keyring(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    error = _refusal(path, "{")
    assert error.message.startswith(f"keyring {path}: not valid JSON (")


def test_a_keyring_of_the_wrong_shape_names_the_keyring_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    error = _refusal(path, '{"version": 2, "keys": []}')
    assert error.message.startswith(f"keyring {path}: version: ")


def test_a_keyring_nested_one_level_past_eight_is_refused_for_its_depth(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    error = _refusal(path, _nested(9))
    assert error.message == f"keyring {path}: nesting depth 9 exceeds 8"


def test_a_keyring_nested_eight_levels_passes_the_depth_bound_to_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    error = _refusal(path, _nested(8))
    assert error.message.startswith(f"keyring {path}: keys.0: ")
    assert "nesting depth" not in error.message


# -- refusals: one entry, named ----------------------------------------------------------------------------


def _keyring_text(*entries: dict[str, Any]) -> str:
    return json.dumps({"version": 1, "keys": list(entries)})


def test_an_entry_that_is_not_an_ed25519_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    good = _entry(_public(1), "good-key")
    bad = _entry(_public(2), "bad-key", public_key="!" * 44)
    error = _refusal(path, _keyring_text(good, bad))
    assert error.message == f"keyring {path}: key 'bad-key' is not an Ed25519 key"


def test_an_entry_whose_keyid_is_not_its_key_s_is_named(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    good = _entry(_public(1), "good-key")
    alias = _entry(_public(2), "alias-key", keyid=keyid_of(_public(3)))
    error = _refusal(path, _keyring_text(good, alias))
    assert error.message == f"keyring {path}: key 'alias-key' has a wrong keyid"


def test_a_key_listed_twice_is_named_by_the_first_16_digits_of_its_keyid(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    key = _public(1)
    error = _refusal(path, _keyring_text(_entry(key, "first"), _entry(_public(2), "other"), _entry(key, "again")))
    assert error.message == f"keyring {path}: key {keyid_of(key)[:16]} listed twice"
