"""`qualify verify-vsa`'s usage refusals and its acceptance line, word for word (mutants that survived test_vsa.py).

test_vsa.py holds each refusal's code; these hold what each says, which option it names, and who signed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.consumer import _verify_vsa as verify_vsa
from desktop_qualify.consumer._verify_vsa import check_release_summaries, check_summaries
from desktop_qualify.evidence_schemas import VSA_LEVELS, Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import vsa_verifier_for
from support.evidence_factory import Evidence, make_evidence
from test_vsa import (
    Qualify,
    _lines,
    _not_a_summary,
    _resign,
    _stranger,
    _verify_vsa,
    _with_verifier_key,
    _written,
)
from test_vsa import chain as chain  # noqa: PLC0414 - the chain fixture, re-exported for these tests


def _argv(chain: Evidence, vsa: Path, *extra: str, artifact: Path | None = None) -> list[str]:
    return ["verify-vsa", "--policy", str(chain.policy_path), *extra, "--artifact",
            str(artifact or chain.artifact_paths[0]), str(vsa)]


def test_the_acceptance_names_the_line_the_level_and_the_signer(qualify: Qualify, chain: Evidence,
                                                                 tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    done = _verify_vsa(qualify, chain, vsa)
    assert done.status == 0, done.text
    artifact = chain.artifact_paths[0]
    assert f"ok   {vsa} line 1: {artifact.name} sha256 " in done.out
    assert "PASSED (DESKTOP_QUALIFIED_LOCAL_CHECK)" in done.out
    assert done.out.rstrip().splitlines()[0].endswith("signed by local-verifier")
    assert (f"VSA ACCEPTED: {artifact.name} passed at DESKTOP_QUALIFIED_LOCAL_CHECK under "
            f"{chain.policy_path.name} (sha256 {chain.policy.sha256[:16]})") in done.out


@pytest.mark.parametrize("where", ["root", "artifact", "vsa"])
def test_a_missing_input_is_named_by_its_option(qualify: Qualify, chain: Evidence, tmp_path: Path,
                                                where: str) -> None:
    vsa = _written(qualify, chain, tmp_path)
    missing = tmp_path / "nowhere"
    if where == "root":
        done = qualify(_argv(chain, vsa, "--root", str(missing)))
        said = f"--root {missing}: missing (no such folder)"
    elif where == "artifact":
        done = qualify(_argv(chain, vsa, artifact=missing))
        said = f"--artifact {missing}: missing (no such file)"
    else:
        done = qualify(_argv(chain, missing))
        said = f"VSA {missing}: missing (no such file)"
    assert done.status == 2, done.text
    assert said in done.err


@pytest.mark.parametrize("where", ["root", "artifact", "vsa"])
def test_an_input_of_the_wrong_kind_is_named_by_its_option(qualify: Qualify, chain: Evidence, tmp_path: Path,
                                                           where: str) -> None:
    vsa = _written(qualify, chain, tmp_path)
    folder, file = tmp_path / "a-folder", tmp_path / "a-file"
    folder.mkdir()
    file.write_text("x", encoding="utf-8")
    if where == "root":
        done, said = qualify(_argv(chain, vsa, "--root", str(file))), f"--root {file}: not a folder"
    elif where == "artifact":
        done, said = qualify(_argv(chain, vsa, artifact=folder)), f"--artifact {folder}: a folder, not a file"
    else:
        done, said = qualify(_argv(chain, folder)), f"VSA {folder}: a folder, not a file"
    assert done.status == 2, done.text
    assert said in done.err


def test_a_level_the_project_never_writes_is_named_and_the_levels_listed(qualify: Qualify, chain: Evidence,
                                                                         tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    level = "L" * 100
    done = qualify(_argv(chain, vsa, "--level", level))
    assert done.status == 2, done.text
    assert (f"--level {'L' * 80!r} is not a level this project writes: one of "
            f"{', '.join(VSA_LEVELS.values())}") in done.err


def test_a_level_given_is_the_level_checked(qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    done = qualify(_argv(chain, vsa, "--level", VSA_LEVELS["audit"]))
    assert done.status == 1, done.text
    assert f"not {VSA_LEVELS['audit']}" in done.text


def test_summaries_of_other_bytes_name_the_artifact_digest_and_what_they_summarise(
        qualify: Qualify, chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, chain, tmp_path)
    other = tmp_path / "other.bin"
    other.write_bytes(b"other bytes")
    digest = hashlib.sha256(b"other bytes").hexdigest()
    done = qualify(_argv(chain, vsa, artifact=other))
    assert done.status == 1, done.text
    assert (f"{vsa}: no summary's subject has the artifact's SHA-256 {digest} "
            f"(it summarises {chain.artifact_paths[0].name})") in done.text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_summaries_file_that_is_a_pipe_is_a_usage_error_with_its_hint(qualify: Qualify, chain: Evidence,
                                                                        tmp_path: Path) -> None:
    fifo = tmp_path / "vsa.fifo"
    os.mkfifo(fifo)
    done = qualify(_argv(chain, fifo))
    assert done.status == 2, done.text
    assert "VSA QE_INPUT_NOT_REGULAR: " in done.err
    assert str(fifo) in done.err
    assert "hint: name the summaries file itself (a regular file)\n" in done.err


def _signed(qualify: Qualify, tmp_path: Path) -> tuple[Evidence, Any, bytes]:
    """A chain with its verifier key, and the gate's one real summary line."""
    evidence = make_evidence(tmp_path)
    key = _with_verifier_key(evidence)
    return evidence, key, _lines(_written(qualify, evidence, tmp_path))[0]


def _check(evidence: Evidence, data: bytes, digest: str | None = None) -> list[Any]:
    policy = load_policy(evidence.policy_path, None)
    sha = digest or hashlib.sha256(evidence.artifact_paths[0].read_bytes()).hexdigest()
    return check_summaries(data, sha, policy, vsa_verifier_for(policy), "S")


def _refusal(evidence: Evidence, data: bytes) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        _check(evidence, data)
    return caught.value


def test_the_last_line_needs_no_newline_and_an_empty_file_holds_no_summary(qualify: Qualify, tmp_path: Path) -> None:
    evidence, _, line = _signed(qualify, tmp_path)
    [accepted] = _check(evidence, line)
    assert (accepted.line, accepted.signer) == (1, "local-verifier")
    empty = _refusal(evidence, b"")
    assert (empty.code, empty.message) == (Code.VSA_SUBJECT, "S: holds no summary, so none names the artifact")


def test_the_line_limit_is_inclusive_and_named(qualify: Qualify, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    evidence, _, line = _signed(qualify, tmp_path)
    monkeypatch.setattr(verify_vsa, "MAX_VSA_LINES", 2)
    assert [s.line for s in _check(evidence, line + b"\n" + line + b"\n")] == [1, 2]
    over = _refusal(evidence, b"\n".join([line] * 3))
    assert (over.code, over.message) == (Code.EVIDENCE_TOO_LARGE, "S: 3 summaries, above 2")


def test_a_summary_under_another_policy_names_both_digests(qualify: Qualify, tmp_path: Path) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    other = "cd" * 32
    uri = "u" * 250

    def edit(s: dict[str, Any]) -> None:
        s["predicate"]["policy"].update(uri=uri, digest={"sha256": other})
    refused = _refusal(evidence, _resign(line, key, edit))
    policy = load_policy(evidence.policy_path, None)
    assert refused.code == Code.VSA_POLICY
    assert refused.message == (f"S line 1: judged under policy {uri[:200]} (sha256 {other[:16]}), not "
                               f"{policy.path} (sha256 {policy.sha256[:16]})")


@pytest.mark.parametrize(("levels", "said"), [
    ([], "none"),
    (["DESKTOP_QUALIFIED_AUDIT", "DESKTOP_QUALIFIED_RELEASE_GATE"],
     "DESKTOP_QUALIFIED_AUDIT, DESKTOP_QUALIFIED_RELEASE_GATE"),
])
def test_a_summary_at_another_level_names_what_it_asserts(qualify: Qualify, tmp_path: Path, levels: list[str],
                                                          said: str) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    refused = _refusal(evidence, _resign(line, key, lambda s: s["predicate"].update(verifiedLevels=levels)))
    name = evidence.artifact_paths[0].name
    assert refused.code == Code.VSA_LEVEL
    assert refused.message == f"S line 1: the summary of {name} asserts {said}, not DESKTOP_QUALIFIED_LOCAL_CHECK"
    assert refused.hint == f"a summary qualify audit --vsa wrote passes only with --level {VSA_LEVELS['audit']}"


def test_summaries_of_other_bytes_name_every_artifact_summarised(qualify: Qualify, tmp_path: Path) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    long = [c * 120 for c in "xyz"]
    renamed = [_resign(line, key, lambda s, n=n: s["subject"][0].update(name=n)) for n in long]
    with pytest.raises(QualificationError) as caught:
        _check(evidence, b"\n".join([line, *renamed, renamed[0]]), digest="0" * 64)
    names = ", ".join(sorted({evidence.artifact_paths[0].name, *long}))[:300]
    assert caught.value.message == (f"S: no summary's subject has the artifact's SHA-256 {'0' * 64} "
                                    f"(it summarises {names})")


def test_a_release_asset_names_the_line_of_a_summary_it_did_not_qualify(qualify: Qualify, tmp_path: Path) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    policy = load_policy(evidence.policy_path, None)
    name = evidence.artifact_paths[0].name
    sha = hashlib.sha256(evidence.artifact_paths[0].read_bytes()).hexdigest()
    verifier = vsa_verifier_for(policy)
    assert check_release_summaries(line + b"\n" + line, {name: sha}, policy, verifier, "R") == 2
    other = _resign(line, key, lambda s: s["subject"][0]["digest"].update(sha256="ef" * 32))
    with pytest.raises(QualificationError) as caught:
        check_release_summaries(line + b"\n" + other, {name: sha}, policy, verifier, "R")
    assert caught.value.message == (f"R line 2: summarises {name} (sha256 {'ef' * 8}), which the release's bundle "
                                    "did not qualify under that name")
    failed = _resign(line, key, lambda s: s["predicate"].update(verificationResult="FAILED"))
    with pytest.raises(QualificationError) as caught:
        check_release_summaries(line + b"\n" + failed, {name: sha}, policy, verifier, "R")
    assert caught.value.message == f"R line 2: the gate's result for {name} is FAILED"
    broken = line[:-20] + b'"}'
    with pytest.raises(QualificationError) as caught:
        check_release_summaries(broken, {name: sha}, policy, verifier, "R")
    assert caught.value.message.startswith("R line 1")


def test_an_empty_line_and_an_oversized_line_are_named_by_number(qualify: Qualify, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    evidence, _, line = _signed(qualify, tmp_path)
    empty = _refusal(evidence, line + b"\n\n" + line)
    assert (empty.code, empty.message) == (Code.SCHEMA_INVALID, "S: line 2 is empty (one summary a line)")
    monkeypatch.setattr(verify_vsa, "MAX_VSA_LINE_BYTES", len(line))
    assert len(_check(evidence, line + b"\n" + line)) == 2
    monkeypatch.setattr(verify_vsa, "MAX_VSA_LINE_BYTES", len(line) - 1)
    over = _refusal(evidence, line)
    assert (over.code, over.message) == (Code.EVIDENCE_TOO_LARGE,
                                         f"S: line 1 is {len(line)} bytes, above {len(line) - 1}")


def test_a_summary_signed_by_another_key_says_why_and_who_may_sign(qualify: Qualify, tmp_path: Path) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    refused = _refusal(evidence, _stranger(line, evidence, key))
    assert refused.code == Code.VSA_SIGNATURE
    assert refused.message.startswith("S line 1")
    assert refused.message.endswith(")")
    assert "(QE_" in refused.message
    assert refused.hint == ("only the policy's verifier identity may sign a summary: the keyring's verifier key, or "
                            "the policy's [verifier] workflow")


def test_a_signed_line_that_is_no_summary_is_named_by_its_line(qualify: Qualify, tmp_path: Path) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    refused = _refusal(evidence, line + b"\n" + _not_a_summary(line, evidence, key))
    assert refused.message.startswith("S line 2"), refused.message


def test_every_level_a_summary_asserts_is_listed_on_acceptance(qualify: Qualify, tmp_path: Path) -> None:
    evidence, key, line = _signed(qualify, tmp_path)
    levels = ["DESKTOP_QUALIFIED_LOCAL_CHECK", "DESKTOP_QUALIFIED_AUDIT"]
    vsa = tmp_path / "two-levels.intoto.jsonl"
    vsa.write_bytes(_resign(line, key, lambda s: s["predicate"].update(verifiedLevels=levels)) + b"\n")
    done = _verify_vsa(qualify, evidence, vsa)
    assert done.status == 0, done.text
    assert "PASSED (DESKTOP_QUALIFIED_LOCAL_CHECK, DESKTOP_QUALIFIED_AUDIT) at " in done.out


def test_a_summaries_file_over_its_bound_is_named(qualify: Qualify, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    evidence, _, line = _signed(qualify, tmp_path)
    vsa = tmp_path / "big.intoto.jsonl"
    vsa.write_bytes(line + b"\n")
    monkeypatch.setattr(verify_vsa, "MAX_VSA_FILE_BYTES", 100)
    done = _verify_vsa(qualify, evidence, vsa)
    assert done.status != 0, done.text
    assert str(vsa) in done.err

