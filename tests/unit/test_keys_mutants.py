"""Local private keys created and loaded: each refusal by its exact code, the file it names and the hint it gives.

``generate_private_key`` writes the key a release engineer signs with and must never replace one; ``load_private_key``
reads it back and refuses anything that is not an unencrypted Ed25519 PEM key. These tests hold each refusal (a key
already there, a key file that cannot be created, a write that fails, a missing, damaged or foreign key file) to
``QE_KEY_INVALID``, to a message naming the file and saying what is wrong, and to the keygen hint; they check that a
failed write leaves no partial key behind and that the key file is opened in binary mode where the platform has one.
Written for the mutants of ``qualify_trust._keys`` that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust._keys import generate_private_key, keyid_of, load_private_key
from support.binary_open import BINARY, spy_on_binary_open

POSIX = os.name == "posix"
HINT = "run 'qualify keygen --policy FILE' to create local keys"


def _generate_refused(path: Path) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        generate_private_key(path)
    return caught.value


def _load_refused(path: Path) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        load_private_key(path)
    return caught.value


# -- generate_private_key ------------------------------------------------------------------------------------


def test_an_existing_key_is_refused_with_a_message_naming_the_file_and_saying_it_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "platform.pem"
    key = generate_private_key(path)
    error = _generate_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: a key already exists; refusing to overwrite it"
    assert keyid_of(load_private_key(path).public_key()) == keyid_of(key.public_key())


def test_a_key_file_that_cannot_be_created_is_refused_naming_the_file_and_the_system_reason(tmp_path: Path) -> None:
    path = tmp_path / ("k" * 300 + ".pem")  # longer than any file system allows a name to be
    error = _generate_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: cannot create the key ({os.strerror(errno.ENAMETOOLONG)})"
    assert error.hint is None


def test_a_key_path_under_a_file_is_not_reported_as_an_existing_key(tmp_path: Path) -> None:
    parent = tmp_path / "keys"
    parent.write_text("a file, not a folder")
    error = _generate_refused(parent / "platform.pem")
    assert error.code is Code.KEY_INVALID
    assert "already exists" not in error.message
    assert error.message == f"{parent / 'platform.pem'}: cannot create the key ({os.strerror(errno.EEXIST)})"


def test_a_failed_key_write_is_refused_naming_the_file_and_leaves_no_partial_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", failing_fsync)
    path = tmp_path / "platform.pem"
    error = _generate_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: cannot write the key ({os.strerror(errno.EIO)})"
    assert not path.exists()


def test_a_failed_key_write_whose_file_is_already_gone_is_still_a_coded_refusal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "platform.pem"

    def removed_then_failing_fsync(fd: int) -> None:
        path.unlink()  # someone removed the half-written key before the cleanup runs
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", removed_then_failing_fsync)
    error = _generate_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: cannot write the key ({os.strerror(errno.EIO)})"
    assert not path.exists()


@pytest.mark.skipif(not POSIX, reason="stands in for Windows' O_BINARY on a POSIX system")
def test_a_key_file_is_opened_in_binary_mode_where_the_platform_has_one(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    flags_seen = spy_on_binary_open(monkeypatch)
    path = tmp_path / "platform.pem"
    generate_private_key(path)
    monkeypatch.undo()
    assert len(flags_seen) == 1
    assert flags_seen[0] & BINARY
    wanted = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    assert flags_seen[0] & wanted == wanted
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")


# -- load_private_key ----------------------------------------------------------------------------------------


def test_a_missing_key_file_is_refused_naming_the_file_with_the_keygen_hint(tmp_path: Path) -> None:
    path = tmp_path / "platform.pem"
    error = _load_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: file not found"
    assert error.hint == HINT
    assert error.diagnostics() == f"QE_KEY_INVALID: {path}: file not found\n  hint: {HINT}"


def test_an_oversized_key_file_is_refused_naming_the_file_and_the_limit_with_the_keygen_hint(tmp_path: Path) -> None:
    path = tmp_path / "platform.pem"
    path.write_bytes(b"x" * (16 * 1024 + 1))
    error = _load_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: larger than the limit of {16 * 1024} bytes"
    assert error.hint == HINT


def test_a_damaged_key_file_is_refused_naming_the_file_and_the_expected_format(tmp_path: Path) -> None:
    path = tmp_path / "platform.pem"
    path.write_bytes(b"not a pem")
    error = _load_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: not an unencrypted PEM private key"


def test_a_key_of_another_algorithm_is_refused_naming_the_file_and_ed25519(tmp_path: Path) -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path = tmp_path / "platform.pem"
    path.write_bytes(pem)
    error = _load_refused(path)
    assert error.code is Code.KEY_INVALID
    assert error.message == f"{path}: not an Ed25519 key"
