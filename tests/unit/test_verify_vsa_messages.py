"""`qualify verify-vsa`'s usage refusals and its acceptance line, word for word (mutants that survived test_vsa.py).

test_vsa.py holds each refusal's code; these hold what each says, which option it names, and who signed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import VSA_LEVELS
from support.evidence_factory import Evidence
from test_vsa import Qualify, _verify_vsa, _written
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
    assert "name the summaries file itself (a regular file)" in done.err
