"""Only regular files in; outputs that cannot harm the machine (issue: run as root, as CI runs).

Every case runs the real `qualify` in a child process with a time limit (a
FIFO that hangs the gate is the bug), in a temporary folder whose every entry
(name, kind, link target, bytes) is compared before and after: nothing but the
intended bytes may change.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy._model import DEFAULT_MAX_CANDIDATE_BYTES
from support.evidence_factory import Evidence, make_evidence
from support.snapshot import snapshot

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /proc/self/fd are POSIX")
TIMEOUT = 120


def _qualify(*args: str | Path, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)



@pytest.fixture
def ev(tmp_path: Path) -> Evidence:
    return make_evidence(tmp_path / "run")


# -- outputs ----------------------------------------------------------------------------------------------------

@posix_only
def test_dash_is_standard_output_and_no_file_named_dash_appears(ev: Evidence, tmp_path: Path) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *ev.verify_argv("--json", "-")],
                          capture_output=True, timeout=TIMEOUT, check=False, cwd=work)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decision"] == "QUALIFIED"
    # The human verdict moved to standard error, so standard output is the JSON alone.
    assert b"QUALIFIED" in done.stderr
    assert list(work.iterdir()) == []


# A link (/dev/stdout included), a FIFO or a device is never written through: tests/unit/test_one_output_rule.py.

@posix_only
def test_a_fifo_output_is_refused_without_a_hang_and_left_as_it_is(ev: Evidence, tmp_path: Path) -> None:
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    done = _qualify(*ev.verify_argv("--json", str(fifo)))
    assert done.returncode == 2
    assert b"QE_USAGE" in done.stderr
    assert b"use - for standard output" in done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@posix_only
@pytest.mark.parametrize("target", ["file", "dangling", "zero-device"])
def test_a_link_to_a_file_or_a_disk_like_device_is_refused_and_nothing_changes(ev: Evidence, tmp_path: Path,
                                                                              target: str) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    victim = outputs / "victim.txt"
    victim.write_text("not yours\n")
    link = outputs / "decision.json"
    link.symlink_to({"file": str(victim), "dangling": str(outputs / "absent"), "zero-device": "/dev/zero"}[target])
    before = snapshot(outputs)
    for option in ("--json", "--summary"):
        done = _qualify(*ev.verify_argv(option, str(link)))
        assert done.returncode == 2, done.stderr
        assert b"QE_USAGE" in done.stderr
        assert snapshot(outputs) == before


@posix_only
def test_audit_outputs_follow_the_same_rules(ev: Evidence, tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    (outputs / "page.html").symlink_to(outputs / "victim.html")
    (outputs / "victim.html").write_text("keep")
    before = snapshot(outputs)
    done = _qualify("audit", "--policy", ev.policy_path, "--evidence", ev.evidence_dir, "--html",
                    outputs / "page.html")
    assert done.returncode == 2
    assert snapshot(outputs) == before
    done = _qualify("audit", "--policy", ev.policy_path, "--evidence", ev.evidence_dir, "--markdown", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"## ")
    assert snapshot(outputs) == before


# -- inputs -----------------------------------------------------------------------------------------------------

@posix_only
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-null"])
def test_a_candidate_that_is_not_a_regular_file_is_refused_without_a_hang(ev: Evidence, tmp_path: Path,
                                                                           kind: str) -> None:
    if kind == "fifo":
        candidate = tmp_path / ev.artifact_paths[0].name
        os.mkfifo(candidate)
    else:
        candidate = Path({"dev-zero": "/dev/zero", "dev-null": "/dev/null"}[kind])
    done = _qualify(*ev.verify_argv(artifacts=[candidate]))
    assert done.returncode == 1, done.stderr
    assert Code.INPUT_NOT_REGULAR.value.encode() in done.stdout


@posix_only
def test_a_huge_sparse_candidate_is_refused_by_size_before_it_is_hashed(ev: Evidence, tmp_path: Path) -> None:
    sparse = tmp_path / ev.artifact_paths[0].name
    with sparse.open("wb") as handle:
        # One byte past the default cap (8 GiB of holes: hashing it would take seconds). It stays under the mutation
        # harness's file size cap (tests/mutation/mutants.py), which counts a sparse file's length.
        handle.truncate(DEFAULT_MAX_CANDIDATE_BYTES + 1)
    done = _qualify(*ev.verify_argv(artifacts=[sparse]))
    assert done.returncode == 1, done.stderr
    assert Code.ARTIFACT_TOO_LARGE.value.encode() in done.stdout
    assert b"max_candidate_bytes" in done.stdout


def test_the_policy_sets_the_candidate_cap(ev: Evidence, tmp_path: Path) -> None:
    policy = ev.policy_path.read_text().replace("[limits]\n", "[limits]\nmax_candidate_bytes = 1048576\n")
    ev.policy_path.write_text(policy)
    big = tmp_path / ev.artifact_paths[0].name
    big.write_bytes(b"\0" * (1024 * 1024 + 1))
    done = _qualify(*ev.verify_argv(artifacts=[big]))
    assert done.returncode == 1
    assert Code.ARTIFACT_TOO_LARGE.value.encode() in done.stdout
    # The real candidate is under the cap (the policy's new digest is another matter: the aggregate binds it).
    assert Code.ARTIFACT_TOO_LARGE.value.encode() not in _qualify(*ev.verify_argv()).stdout


@posix_only
def test_a_statement_that_is_a_fifo_is_refused_without_a_hang(ev: Evidence) -> None:
    statement = next(ev.evidence_dir.glob("platform-*.dsse.json"))
    statement.unlink()
    os.mkfifo(statement)
    done = _qualify(*ev.verify_argv())
    assert done.returncode == 1
    # Refused by what the folder listing says, and again by fstat on the opened file if it were swapped in later.
    assert b"QE_EVIDENCE_UNEXPECTED" in done.stdout
    assert b"not a regular file" in done.stdout


@posix_only
@pytest.mark.parametrize("what", ["policy", "keyring"])
def test_a_policy_or_keyring_that_is_a_fifo_is_a_usage_error_without_a_hang(ev: Evidence, what: str) -> None:
    target = ev.policy_path if what == "policy" else ev.keys.keyring
    target.unlink()
    os.mkfifo(target)
    done = _qualify(*ev.verify_argv())
    assert done.returncode == 2
    assert b"not a regular file" in done.stderr


@posix_only
def test_a_bundle_that_is_a_fifo_is_a_rejected_run_without_a_hang(ev: Evidence, tmp_path: Path) -> None:
    fifo = tmp_path / "x.qualify-bundle.zip"
    os.mkfifo(fifo)
    done = _qualify("audit", "--policy", ev.policy_path, "--bundle", fifo)
    assert done.returncode == 1
    assert Code.INPUT_NOT_REGULAR.value.encode() in done.stdout
