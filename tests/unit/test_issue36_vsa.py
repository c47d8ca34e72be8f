"""Issue 36: the VSA checks no test held.

- ``verify-vsa`` judges every summary of the artifact: a later FAILED summary of the same bytes, validly signed,
  is never outvoted by the PASSED one before it;
- read-back refuses a summaries asset holding a validly signed summary of a qualified artifact that says FAILED
  (the subject check passes: only the result check can refuse it);
- the summary's ``predicate.policy.uri`` names a commit only when the policy committed there is these bytes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import Code, canonical_bytes
from desktop_qualify.qualify_trust import add_to_keyring, generate_private_key, load_private_key
from desktop_qualify.qualify_trust._envelope import sign_envelope
from support.checkout import at_real_commit
from support.evidence_factory import REPOSITORY, Evidence, make_evidence
from support.github_emulator import DEFAULT_TOKEN, Asset, GitHubEmulator, Release

TAG = "v1.0.0"


def _verifier_key(ev: Evidence) -> Ed25519PrivateKey:
    """The keyring's verifier key (as `qualify keygen` makes it), named by the policy; evidence re-bound."""
    path = ev.keys.keyring.parent / "keys" / "verifier.ed25519.pem"
    if path.exists():
        return load_private_key(path)
    key = generate_private_key(path)
    add_to_keyring(ev.keys.keyring, "local-verifier", key.public_key(), ["verifier"])
    text = ev.policy_path.read_text(encoding="utf-8")
    ev.policy_path.write_text(text.replace("\n[source]", f'\nverifier_key = "{path.as_posix()}"\n\n[source]', 1),
                              encoding="utf-8")
    ev.rebind_provenance()
    ev.write_aggregate()
    return key


def _payload(line: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(base64.b64decode(json.loads(line)["payload"]))
    return value


def _failed_resigned(line: bytes, key: Ed25519PrivateKey) -> bytes:
    """The same summary (same artifact, same policy), FAILED, validly signed by the verifier key."""
    statement = _payload(line)
    statement["predicate"]["verificationResult"] = "FAILED"
    statement["predicate"]["verifiedLevels"] = []
    return sign_envelope(canonical_bytes(statement), key)


def _summaries(qualify: Any, ev: Evidence, out: Path) -> bytes:
    result = qualify(ev.verify_argv("--vsa", str(out)))
    assert result.status == 0, result.text
    return out.read_bytes()


# -- 1. verify-vsa: every summary of the artifact is judged ----------------------------------------------------------


def test_a_later_failed_summary_of_the_same_bytes_is_never_outvoted(qualify: Any, tmp_path: Path) -> None:
    ev = make_evidence(tmp_path)
    key = _verifier_key(ev)
    real = _summaries(qualify, ev, tmp_path / "vsa.intoto.jsonl").splitlines()[0]
    argv = ["verify-vsa", "--policy", str(ev.policy_path), "--artifact", str(ev.artifact_paths[0])]
    alone = tmp_path / "passed.jsonl"
    alone.write_bytes(real + b"\n")
    assert qualify([*argv, str(alone)]).status == 0  # the PASSED one alone is accepted
    both = tmp_path / "passed-then-failed.jsonl"
    both.write_bytes(real + b"\n" + _failed_resigned(real, key) + b"\n")
    result = qualify([*argv, str(both)])
    assert result.status == 1, result.text
    assert Code.VSA_FAILED.value in result.err, result.text
    assert "line 2" in result.err
    assert "VSA ACCEPTED" not in result.out


# -- 2. read-back: a validly signed FAILED summary of a qualified artifact ------------------------------------------


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubEmulator]:
    server = GitHubEmulator().start()
    monkeypatch.setenv("GITHUB_API_URL", server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", DEFAULT_TOKEN)
    yield server
    server.stop()


def _publish_with(qualify: Any, tmp_path: Path, emulator: GitHubEmulator, ev: Evidence, summaries: bytes) -> None:
    bundle = tmp_path / "run.qualify-bundle.zip"
    assert qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(bundle)]).status == 0
    assets = [*((p.name, p.read_bytes()) for p in ev.artifact_paths), (bundle.name, bundle.read_bytes()),
              ("verification-summary.intoto.jsonl", summaries)]
    repo = emulator.repo(REPOSITORY)
    repo.releases = [Release(1, TAG, [Asset(100 + i, name, body) for i, (name, body) in enumerate(assets)])]
    repo.tags[TAG] = ev.sha


def test_read_back_refuses_a_validly_signed_failed_summary_of_a_qualified_artifact(
        qualify: Any, tmp_path: Path, emulator: GitHubEmulator) -> None:
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    key = _verifier_key(ev)
    real = _summaries(qualify, ev, tmp_path / "vsa.intoto.jsonl").splitlines()[0]
    failed = _failed_resigned(real, key)
    # Its subject is the qualified artifact, under the name the bundle gave it: only its result can refuse it.
    assert _payload(failed)["subject"] == _payload(real)["subject"]
    _publish_with(qualify, tmp_path, emulator, ev, failed + b"\n")
    done = qualify(["readback", "--policy", str(ev.policy_path), "--repository", REPOSITORY, "--tag", TAG])
    assert done.status == 1, done.text
    assert Code.VSA_FAILED.value in done.out, done.out
    assert Code.VSA_SUBJECT.value not in done.out
    assert "READBACK FAILED" in done.out


# -- 3. the summary's policy URI names a commit only for the bytes committed there -----------------------------------


def test_the_policy_uri_names_the_commit_only_when_the_committed_policy_is_these_bytes(
        qualify: Any, tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, committed_layout=True)
    _verifier_key(ev)
    at_real_commit(ev)  # the policy (naming the verifier key) committed, the run re-made at that commit
    sha = ev.sha
    base = f"urn:desktop-qualify:{ev.policy.file.producer.repository}"
    committed = _payload(_summaries(qualify, ev, tmp_path / "committed.jsonl").splitlines()[0])
    assert committed["predicate"]["policy"]["uri"] == f"{base}@{sha}#policies/local.toml"
    # The same commit's run judged under a policy edited since (not committed): no commit is claimed for it.
    ev.policy_path.write_bytes(ev.policy_path.read_bytes() + b"\n# edited, not committed\n")
    ev.rebind_provenance()
    ev.write_aggregate()
    edited = _payload(_summaries(qualify, ev, tmp_path / "edited.jsonl").splitlines()[0])
    assert edited["predicate"]["policy"]["digest"]["sha256"] == ev.policy.sha256
    assert edited["predicate"]["policy"]["uri"] == f"{base}#policies/local.toml"
