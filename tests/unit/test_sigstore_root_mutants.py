"""The pinned Sigstore trusted root and a certificate's run URI, refused by exact code, message and bound.

``qualify_trust._sigstore_root`` reads the root an auditor verifies against years later: bounded (256 KiB, 12 levels
deep), a JSON object, usable by sigstore-python, and the pinned bytes only. Each refusal names the file; the pin's
refusal carries the hint a release engineer acts on; the parsed root remembers which file it came from.
``parse_run_invocation_uri`` reads the run out of a certificate and names a URI it refuses, cut at 200 characters.
Written for the mutants of ``qualify_trust._sigstore_root`` and ``_github_identity`` that survived the suite
(docs/mutation.md).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust._github_identity import parse_run_invocation_uri
from desktop_qualify.qualify_trust._sigstore_root import (
    _CONFIG_HEAD,
    _CONFIG_TAIL,
    MAX_TRUSTED_ROOT_BYTES,
    _first_line,
    load_pinned_trusted_root,
    load_trusted_root,
    trusted_root_from_bytes,
)
from sigstore.models import ClientTrustConfig

ROOT = Path(__file__).resolve().parents[2] / "policies" / "sigstore" / "trusted_root.production.json"
WHAT = "trusted root r.json"


def _refused(call: object, *args: object, **kwargs: object) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return caught.value


def test_a_root_nested_past_twelve_levels_is_refused_at_the_root_s_own_bound() -> None:
    data = ("{" + '"a":{' * 12 + "}" * 13).encode()
    refused = _refused(trusted_root_from_bytes, data, what=WHAT)
    assert (refused.code, refused.message) == (Code.POLICY_INVALID, f"{WHAT}: nesting depth 13 exceeds 12")


def test_a_root_past_256_kib_is_refused_at_the_root_s_own_bound() -> None:
    data = b'{"a": "' + b"x" * MAX_TRUSTED_ROOT_BYTES + b'"}'
    refused = _refused(trusted_root_from_bytes, data, what=WHAT)
    assert (refused.code, refused.message) == (
        Code.POLICY_INVALID, f"{WHAT}: {len(data)} bytes exceeds the limit of {MAX_TRUSTED_ROOT_BYTES}")


def test_a_root_that_is_not_an_object_is_refused_naming_the_file() -> None:
    refused = _refused(trusted_root_from_bytes, b"[]", what=WHAT)
    assert (refused.code, refused.message) == (Code.POLICY_INVALID, f"{WHAT}: a trusted root must be a JSON object")


def test_a_root_sigstore_cannot_use_is_refused_with_sigstore_s_first_line() -> None:
    with pytest.raises(ValueError, match="validation error") as sigstore_said:
        ClientTrustConfig.from_json(_CONFIG_HEAD + "{}" + _CONFIG_TAIL)
    refused = _refused(trusted_root_from_bytes, b"{}", what=WHAT)
    assert (refused.code, refused.message) == (
        Code.POLICY_INVALID, f"{WHAT}: not a usable Sigstore trusted root ({_first_line(sigstore_said.value)})")
    assert _first_line(sigstore_said.value) not in {"", "None", "NoneType"}


def test_sigstore_s_first_line_is_its_message_s_first_line_or_its_type_cut_at_200() -> None:
    assert _first_line(ValueError("  first line\nsecond line\n")) == "first line"
    assert _first_line(KeyError()) == "KeyError"
    assert _first_line(ValueError("x" * 300)) == "x" * 200


def test_the_pinned_root_is_read_from_its_file_and_remembers_it() -> None:
    data = ROOT.read_bytes()
    pinned = load_pinned_trusted_root(ROOT, hashlib.sha256(data).hexdigest().upper())
    assert (pinned.sha256, pinned.source) == (hashlib.sha256(data).hexdigest(), f"trusted root {ROOT}")
    named = load_trusted_root(ROOT)
    assert (named.sha256, named.source) == (hashlib.sha256(data).hexdigest(), f"trusted root {ROOT}")


def test_a_root_whose_bytes_are_not_the_pinned_ones_is_refused_with_the_hint() -> None:
    actual = hashlib.sha256(ROOT.read_bytes()).hexdigest()
    refused = _refused(load_pinned_trusted_root, ROOT, "0" * 64)
    assert (refused.code, refused.message) == (
        Code.POLICY_INVALID, f"trusted root {ROOT}: SHA-256 {actual} is not the pinned {'0' * 64}")
    assert refused.hint == ("the policy pins the trusted root's bytes; update trusted_root_sha256 only with a "
                            "reviewed root")


@pytest.mark.parametrize("load", [lambda p: load_pinned_trusted_root(p, "0" * 64), load_trusted_root],
                         ids=["pinned", "named"])
def test_an_absent_root_is_named_as_the_trusted_root(load: object, tmp_path: Path) -> None:
    absent = tmp_path / "absent.json"
    refused = _refused(load, absent)
    assert refused.code is Code.POLICY_INVALID
    assert refused.message.startswith(f"trusted root {absent}")


@pytest.mark.parametrize("load", [lambda p: load_pinned_trusted_root(p, hashlib.sha256(b"[]").hexdigest()),
                                  load_trusted_root], ids=["pinned", "named"])
def test_a_root_file_that_is_not_an_object_is_named_as_the_trusted_root(load: object, tmp_path: Path) -> None:
    path = tmp_path / "root.json"
    path.write_bytes(b"[]")
    refused = _refused(load, path)
    assert (refused.code, refused.message) == (
        Code.POLICY_INVALID, f"trusted root {path}: a trusted root must be a JSON object")


def test_a_run_uri_that_is_not_a_run_attempt_is_named_cut_at_200_characters() -> None:
    uri = "https://github.com/octo/app/actions/runs/42/" + "x" * 300
    refused = _refused(parse_run_invocation_uri, uri)
    assert (refused.code, refused.message) == (
        Code.WORKFLOW_IDENTITY_MISMATCH, f"run invocation URI {uri[:200]!r} is not a GitHub Actions run attempt")
    assert parse_run_invocation_uri("https://github.com/octo/app/actions/runs/42/attempts/3") == ("octo/app", "42", 3)

