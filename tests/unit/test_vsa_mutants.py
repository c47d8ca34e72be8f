"""consumer/_vsa.py, function by function: the URIs a summary names (a tag or asset name kept as one path segment, a
policy outside policies/, GitHub mode, a commit the caller already anchored), the verifier's version key, the note
for an artifact whose name the schema refuses, the `--vsa` file's lines and the option its errors name. Written for
the mutants of the module that survived every gate and audit row (docs/mutation.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.consumer._vsa import (
    SummaryWriter,
    _one_line,
    check_release_tag,
    policy_uri,
    resource_uri,
    summary_statements,
)
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_runtime import tool_version

REPOSITORY = "owner/app"
COMMIT = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
SHA = "a1" * 32


def _policy(path: Path, *, root: Path | None = None, sigstore: object | None = None) -> Any:
    return SimpleNamespace(path=path, sha256="9" * 64, sigstore=sigstore, repository_root=lambda: root,
                           file=SimpleNamespace(producer=SimpleNamespace(repository=REPOSITORY)))


# check_release_tag

@pytest.mark.parametrize("tag", ["v1.0.0", "release/v1", "app-1.2+build.3", None])
def test_a_plain_tag_name_is_accepted(tag: str | None) -> None:
    check_release_tag(tag)


@pytest.mark.parametrize("tag", ["v1..0", "release/../v1", "v1 0", "-v1", "v" * 250])
def test_a_tag_with_dot_dot_or_outside_the_pattern_is_a_usage_error_naming_it(tag: str) -> None:
    with pytest.raises(QualificationError) as caught:
        check_release_tag(tag)
    assert (caught.value.code, caught.value.message) == (
        Code.USAGE, f"--release-tag {tag[:80]!r} is not a release tag name")


# resource_uri: the tag and the asset are each one path segment, '/' included.

def test_a_tag_and_an_asset_name_with_a_slash_stay_one_segment_each() -> None:
    github = _policy(Path("/p/policies/release.toml"), sigstore=object())
    assert resource_uri(github, "app/x.tar.gz", "release/v1") == (
        f"https://github.com/{REPOSITORY}/releases/download/release%2Fv1/app%2Fx.tar.gz")
    local = _policy(Path("/p/policies/local.toml"))
    assert resource_uri(local, "app/x.tar.gz", "release/v1") == (
        f"urn:desktop-qualify:{REPOSITORY}:release:release%2Fv1:app%2Fx.tar.gz")


# policy_uri: where the policy is in its checkout, and the kind of base.

def test_a_policy_outside_policies_is_named_by_its_path_in_the_checkout(tmp_path: Path) -> None:
    policy = _policy(tmp_path / "config" / "release.toml", root=tmp_path)
    assert policy_uri(policy, None, committed_at=COMMIT) == (
        f"urn:desktop-qualify:{REPOSITORY}@{COMMIT}#config/release.toml")


def test_a_policy_out_of_any_checkout_is_named_under_policies(tmp_path: Path) -> None:
    policy = _policy(tmp_path / "config" / "release.toml")
    assert policy_uri(policy, COMMIT) == f"urn:desktop-qualify:{REPOSITORY}#policies/release.toml"


def test_a_github_mode_policy_is_named_by_its_git_url(tmp_path: Path) -> None:
    policy = _policy(tmp_path / "policies" / "release.toml", root=tmp_path, sigstore=object())
    assert policy_uri(policy, None, committed_at=COMMIT) == (
        f"git+https://github.com/{REPOSITORY}@{COMMIT}#policies/release.toml")


# summary_statements

def _verdict(*names: str) -> Any:
    return SimpleNamespace(candidates_checked=True, candidate_digests=[(name, SHA) for name in names], platforms=[],
                           provenance={}, aggregate_signed=None)


def _decision() -> Any:
    return SimpleNamespace(decision="QUALIFIED", candidate_sha=None, checked_at="2026-12-05T08:00:00Z",
                           mode="local-check")


def test_a_summary_names_the_policy_at_the_commit_the_caller_anchored(tmp_path: Path) -> None:
    policy = _policy(tmp_path / "policies" / "local.toml", root=tmp_path)
    (statement,) = summary_statements(_verdict("app.tar.gz"), policy, _decision(), committed_at=COMMIT)
    predicate = json.loads(statement)["predicate"]
    assert predicate["policy"] == {"uri": f"urn:desktop-qualify:{REPOSITORY}@{COMMIT}#policies/local.toml",
                                   "digest": {"sha256": "9" * 64}}
    assert predicate["verifier"]["version"] == {"desktop-qualify": tool_version()}


def test_an_artifact_the_schema_refuses_is_left_out_with_a_note_and_the_next_one_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = _policy(tmp_path / "policies" / "local.toml", root=tmp_path)
    refused = "x" * 140 + " y"
    statements = summary_statements(_verdict(refused, "app.tar.gz"), policy, _decision(), committed_at=COMMIT)
    assert [json.loads(s)["subject"][0]["name"] for s in statements] == ["app.tar.gz"]
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"note: no Verification Summary for {refused[:128]!r}: summary of {refused}")
    assert err.count("\n") == 1


# SummaryWriter.write and _one_line

class _Signer:
    def __init__(self, signed: dict[bytes, bytes]) -> None:
        self.signed = signed

    def sign_statement(self, statement: bytes) -> bytes:
        return self.signed[statement]


def test_each_signed_summary_is_one_line_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.intoto.jsonl"
    signer = _Signer({b"one": b'{"a": 1}\n', b"two": b'{\n  "b": "\xc3\xa9"\n}\n'})
    assert SummaryWriter(path, signer).write([b"one", b"two"]) == 2  # type: ignore[arg-type]
    assert path.read_bytes() == b'{"a": 1}\n{"b":"\xc3\xa9"}\n'


def test_a_one_line_document_is_kept_byte_for_byte_and_a_multi_line_one_compacted() -> None:
    assert _one_line(b' {"a": 1,  "b": [1, 2]} \n') == b'{"a": 1,  "b": [1, 2]}'
    assert _one_line(b'{\n "a": 1,\n "b": "\xc3\xa9"\n}') == b'{"a":1,"b":"\xc3\xa9"}'


def test_a_vsa_path_that_is_a_folder_is_refused_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        SummaryWriter(tmp_path, _Signer({b"one": b"{}"})).write([b"one"])  # type: ignore[arg-type]
    assert caught.value.message == f"--vsa {tmp_path}: cannot write (a folder)"
