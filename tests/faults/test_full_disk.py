"""A full disk while evidence is written (issue 7, item 7): QE_ENVIRONMENT, exit 2, one line, nothing partial.

Two ways to fill a disk: RLIMIT_FSIZE in a child (a write past the limit fails
with EFBIG) and a 64 KiB tmpfs in a private mount namespace (ENOSPC), skipped
where user namespaces cannot mount one. Failures at fsync and rename, which a
real full disk rarely produces on demand, are injected in-process.

In every case the target is left as it was (absent, or its earlier complete
content) and no temporary file stays beside it.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import _atomic as io_module
from desktop_qualify.qualify_files import write_atomic
from faultkit import (
    PLATFORM,
    App,
    ProducerJob,
    Reference,
    linux_only,
    listing,
    qualify_with_file_size_limit,
    run_on_full_tmpfs,
    tmpfs_unavailable,
)
from support.chain import qualify
from support.evidence_factory import Evidence, make_evidence

EARLIER = "the earlier, complete content\n"
_NO_TMPFS = tmpfs_unavailable()
needs_tmpfs = pytest.mark.skipif(_NO_TMPFS is not None, reason=f"no small tmpfs to fill: {_NO_TMPFS}")
posix_only = pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE and SIGXFSZ are POSIX")


def _one_environment_line(stderr: str, target: Path | str, why: str) -> None:
    """The error is one line, with the stable code, the file and the reason; never a traceback."""
    assert "Traceback" not in stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("QE_")]
    assert line == f"QE_ENVIRONMENT: {target}: cannot write ({why})", stderr


# -- write_atomic itself ----------------------------------------------------------------------------------------

# Writes SIZE bytes to TARGET, with the file size limit LIMIT when LIMIT >= 0; prints the error it got.
_WRITE = (
    "import json, resource, signal, sys\n"
    "from pathlib import Path\n"
    "from desktop_qualify.evidence_schemas import QualificationError\n"
    "from desktop_qualify.qualify_files import write_atomic\n"
    "limit, target, size = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])\n"
    "if limit >= 0:\n"
    "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "try:\n"
    "    write_atomic(target, b'x' * size)\n"
    "except QualificationError as exc:\n"
    "    print(json.dumps({'code': exc.code.value, 'message': exc.message}))\n"
    "else:\n"
    "    print(json.dumps({'code': None}))\n"
)

# 100 bytes sit in the file object's buffer until the flush, so the flush fails; 1 MiB goes to the file
# during the write itself, so the write fails.
SIZES = {"failing-in-flush": 100, "failing-in-write": 1 << 20}


@posix_only
@pytest.mark.parametrize("earlier", [True, False], ids=["target-exists", "no-target"])
@pytest.mark.parametrize("size", sorted(SIZES))
def test_write_atomic_past_the_file_size_limit(tmp_path: Path, size: str, earlier: bool) -> None:
    target = tmp_path / "out" / "platform-linux.dsse.json"
    target.parent.mkdir()
    if earlier:
        target.write_text(EARLIER)
    done = subprocess.run([sys.executable, "-c", _WRITE, "10", str(target), str(SIZES[size])], capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == {"code": "QE_ENVIRONMENT", "message": f"{target}: cannot write (File too large)"}
    assert listing(target.parent) == ([target.name] if earlier else [])
    if earlier:
        assert target.read_text() == EARLIER


@needs_tmpfs
@pytest.mark.parametrize("earlier", [True, False], ids=["target-exists", "no-target"])
@pytest.mark.parametrize("size", sorted(SIZES))
def test_write_atomic_on_a_full_tmpfs(tmp_path: Path, size: str, earlier: bool) -> None:
    mount = tmp_path / "full"
    target = mount / "aggregate.dsse.json"
    ran = run_on_full_tmpfs(mount, [sys.executable, "-c", _WRITE, "-1", str(target), str(SIZES[size])],
                            {target.name: EARLIER} if earlier else {})
    assert ran.rc == 0, ran.stderr
    assert json.loads(ran.stdout) == {"code": "QE_ENVIRONMENT",
                                      "message": f"{target}: cannot write (No space left on device)"}
    assert ran.files == ({target.name: EARLIER, "filler": "filler"} if earlier else {"filler": "filler"})


def _failing(err: int):  # type: ignore[no-untyped-def]
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(err, os.strerror(err))

    return fail


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EFBIG, errno.EDQUOT], ids=errno.errorcode.get)
@pytest.mark.parametrize("step", ["fsync", "rename"])
def test_write_atomic_failing_in_fsync_or_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 step: str, err: int) -> None:
    target = tmp_path / "decision.json"
    target.write_text(EARLIER)
    if step == "fsync":
        monkeypatch.setattr(os, "fsync", _failing(err))
    else:
        monkeypatch.setattr(Path, "replace", _failing(err))
    with pytest.raises(QualificationError) as caught:
        write_atomic(target, b"the new content\n")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.message == f"{target}: cannot write ({os.strerror(err)})"
    assert caught.value.exit_status == 2
    assert listing(tmp_path) == [target.name]
    assert target.read_text() == EARLIER


def test_write_atomic_failing_in_the_folder_fsync_after_the_rename(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The one failure after the rename: still reported, and the target holds the complete new content."""
    target = tmp_path / "decision.json"
    target.write_text(EARLIER)
    monkeypatch.setattr(io_module, "_fsync_folder", _failing(errno.EIO))
    with pytest.raises(QualificationError) as caught:
        write_atomic(target, b"the new content\n")
    assert caught.value.code is Code.ENVIRONMENT
    assert listing(tmp_path) == [target.name]
    assert target.read_text() == "the new content\n"


def test_write_atomic_interrupted_mid_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not an OSError (Ctrl-C, SIGTERM turned into SystemExit): the temporary file goes all the same."""
    target = tmp_path / "decision.json"
    target.write_text(EARLIER)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, b"the new content\n")
    assert listing(tmp_path) == [target.name]
    assert target.read_text() == EARLIER


# -- the commands that write evidence and decisions ---------------------------------------------------------------

@pytest.fixture
def platform_only(tmp_path: Path) -> Evidence:
    return make_evidence(tmp_path / "platform-only", aggregate=False)


@pytest.fixture
def qualified(tmp_path: Path) -> Evidence:
    evidence = make_evidence(tmp_path / "qualified")
    control = qualify(*evidence.verify_argv())
    assert control.returncode == 0, control.stdout + control.stderr
    return evidence


def _aggregate_argv(evidence: Evidence, out: Path) -> list[str]:
    return ["aggregate", "--policy", str(evidence.policy_path), "--evidence", str(evidence.evidence_dir),
            "--out", str(out)]


@posix_only
@pytest.mark.parametrize("earlier", [True, False], ids=["target-exists", "no-target"])
def test_aggregate_past_the_file_size_limit(platform_only: Evidence, tmp_path: Path, earlier: bool) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "aggregate.dsse.json"
    if earlier:
        target.write_text(EARLIER)
    done = qualify_with_file_size_limit(512, *_aggregate_argv(platform_only, out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    _one_environment_line(done.stderr, target, "File too large")
    assert listing(out) == ([target.name] if earlier else [])
    if earlier:
        assert target.read_text() == EARLIER
    # The same command with room to write succeeds: the limit, nothing else, made it fail.
    assert qualify(*_aggregate_argv(platform_only, out)).returncode == 0


@needs_tmpfs
def test_aggregate_on_a_full_tmpfs(platform_only: Evidence, tmp_path: Path) -> None:
    mount = tmp_path / "full"
    argv = [sys.executable, "-m", "desktop_qualify.qualify_cli", *_aggregate_argv(platform_only, mount)]
    ran = run_on_full_tmpfs(mount, argv, {"aggregate.dsse.json": EARLIER})
    assert ran.rc == 2, ran.stdout + ran.stderr
    assert ran.stdout == ""
    _one_environment_line(ran.stderr, mount / "aggregate.dsse.json", "No space left on device")
    assert ran.files == {"aggregate.dsse.json": EARLIER, "filler": "filler"}


@posix_only
@pytest.mark.parametrize("earlier", [True, False], ids=["target-exists", "no-target"])
def test_verify_json_past_the_file_size_limit(qualified: Evidence, tmp_path: Path, earlier: bool) -> None:
    decision = tmp_path / "decision" / "decision.json"
    decision.parent.mkdir()
    if earlier:
        decision.write_text(EARLIER)
    done = qualify_with_file_size_limit(256, *qualified.verify_argv("--json", str(decision)))
    assert done.returncode == 2, done.stdout + done.stderr
    # No verdict is printed when the decision it reports could not be written.
    assert done.stdout == ""
    _one_environment_line(done.stderr, decision, "File too large")
    assert listing(decision.parent) == ([decision.name] if earlier else [])
    if earlier:
        assert decision.read_text() == EARLIER


@needs_tmpfs
def test_verify_json_on_a_full_tmpfs(qualified: Evidence, tmp_path: Path) -> None:
    mount = tmp_path / "full"
    decision = mount / "decision.json"
    ran = run_on_full_tmpfs(mount, [sys.executable, "-m", "desktop_qualify.qualify_cli",
                                    *qualified.verify_argv("--json", str(decision))], {decision.name: EARLIER})
    assert ran.rc == 2, ran.stdout + ran.stderr
    assert ran.stdout == ""
    _one_environment_line(ran.stderr, decision, "No space left on device")
    assert ran.files == {decision.name: EARLIER, "filler": "filler"}


@pytest.mark.slow
@linux_only
def test_produce_with_the_disk_full_at_emit(app: App, reference: Reference) -> None:
    """The disk fills up while the job runs: every stage passed, and then the statement cannot be written."""
    out = app.root / "emit-on-a-full-disk"
    job = ProducerJob(app, out, "emit-full-disk", cached=reference, fsize_at_emit=4096)
    code, stdout, stderr = job.finish()
    assert code == 2, stderr
    assert stdout == ""
    # The statement is written in the job's staging folder; nothing reached the output's evidence folder.
    _one_environment_line(stderr, out / f".staging-{PLATFORM}" / "evidence" / f"platform-{PLATFORM}.dsse.json",
                          "File too large")
    assert f"[produce {PLATFORM}] sign and emit FAILED" in stderr
    assert listing(out / "evidence") == []
    assert "passed=False" not in stderr
