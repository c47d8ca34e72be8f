"""producer/_reproduce: the second build under varied conditions, both digests in the record, the difference shown.

The build here is a real committed script run through the real ``run_bounded`` (by an unconfined
``StageRunner``: the variations, not the confinement, are under test): one that depends on its source
only reproduces; one that writes a condition of its run (its TMPDIR, umask, locale or the clock) into the output
does not, and the producer says which member differs.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer._build import BuildPlan, build
from desktop_qualify.producer.confinement import StageRunner
from desktop_qualify.producer.os_signing._platform_signing import NoPlatformSigner
from support.chain import commit_tree
from support.stage_runners import unconfined_runner

_BUILD = """
import gzip, io, os, pathlib, sys, tarfile
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
leak = sys.argv[sys.argv.index("--leak") + 1] if "--leak" in sys.argv else None
members = {"app/app": pathlib.Path("main.py").read_bytes()}
if leak == "tmpdir":
    members["app/where"] = os.environ["TMPDIR"].encode()
elif leak == "umask":
    mask = os.umask(0); os.umask(mask)
    members["app/umask"] = str(mask).encode()
second = "second-build-elsewhere" in os.getcwd()
if "--spans" in sys.argv:  # each build says when it ran, in a folder beside the work folder
    spans = pathlib.Path(sys.argv[sys.argv.index("--spans") + 1])
    import time
    (spans / ("second.start" if second else "first.start")).write_text(repr(time.time()))
    time.sleep(1.5)
    (spans / ("second.end" if second else "first.end")).write_text(repr(time.time()))
if "--first-fails" in sys.argv:  # the first fails once the second is running, so there is a tree to kill
    import time
    pid_file = pathlib.Path(sys.argv[sys.argv.index("--first-fails") + 1])
    if not second:
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        sys.exit("the first build failed")
    tmp = pid_file.with_suffix(".tmp")
    tmp.write_text(str(os.getpid()))
    os.replace(tmp, pid_file)
    time.sleep(60)
epoch = int(os.environ["SOURCE_DATE_EPOCH"])
with (out / "app-1.0-linux.tar.gz").open("wb") as raw, \\
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch) as gz, tarfile.open(fileobj=gz, mode="w") as tf:
    for name, data in sorted(members.items()):
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = len(data), epoch, 0o755
        tf.addfile(info, io.BytesIO(data))
"""


@pytest.fixture
def app_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "build.py").write_text(_BUILD, encoding="utf-8")
    (repo / "app" / "main.py").write_text("print('app')\n", encoding="utf-8")
    return repo, commit_tree(repo, "app")


def _build(repo: Path, sha: str, tmp_path: Path, *extra: str, reproduce: bool = True,
           runner: StageRunner | None = None):  # type: ignore[no-untyped-def]
    plan = BuildPlan(argv=["{python}", "build.py", "--out", "{out}", *extra], env_names=(), tools={},
                     output_glob="app-*-linux.tar.gz", kind="archive", executable="app/app")
    return build(repo=repo, sha=sha, ref="refs/heads/main", app_source=repo / "app", plan=plan, app_name="app",
                 platform="linux", arch="x86_64", work=tmp_path / "work", artifacts=tmp_path / "artifacts",
                 signer=NoPlatformSigner(), timeout=60, reproduce=reproduce,
                 runner=runner or unconfined_runner(),
                 environ={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"})


def test_a_build_of_its_source_only_reproduces_and_the_record_says_what_varied(
        app_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = app_repo
    runner = unconfined_runner()
    out = _build(repo, sha, tmp_path, runner=runner)
    repro = out.record.reproduction
    assert repro is not None
    assert repro.reproduced
    # Both builds are app code: each ran through the job's runner, recorded as its own stage.
    assert sorted(facts.stage for facts in runner.facts) == ["build", "build-reproduction"]
    assert repro.first_sha256 == repro.second_sha256 == out.record.artifact.sha256
    varied = {v.name: (v.first, v.second) for v in repro.variations}
    assert set(varied) == {"build-path", "time", "tmpdir", "home", "locale", "timezone", "umask"}
    assert all(first != second for first, second in varied.values()), varied
    assert varied["locale"] == ("C.UTF-8", "fr_CH.UTF-8")
    assert out.difference is None


@pytest.mark.parametrize("leak", ["tmpdir", "umask"])
def test_a_build_that_leaks_a_condition_does_not_reproduce_and_names_the_member(
        leak: str, app_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = app_repo
    out = _build(repo, sha, tmp_path, "--leak", leak)
    repro = out.record.reproduction
    assert repro is not None
    assert not repro.reproduced
    assert repro.first_sha256 == out.record.artifact.sha256 != repro.second_sha256
    assert out.difference is not None
    member = {"tmpdir": "app/where", "umask": "app/umask"}[leak]
    assert f"first difference: member 1: '{member}': " in out.difference, out.difference
    assert "diffoscope" in out.difference


def test_no_second_build_unless_asked(app_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = app_repo
    out = _build(repo, sha, tmp_path, reproduce=False)
    assert out.record.reproduction is None
    assert not (tmp_path / "work" / "reproduce").exists()


def test_the_second_build_runs_beside_the_first_and_starts_later(app_repo: tuple[Path, str],
                                                                 tmp_path: Path) -> None:
    """The two builds overlap (the second core does the second build), and the second starts later."""
    repo, sha = app_repo
    spans = tmp_path / "spans"
    spans.mkdir()
    out = _build(repo, sha, tmp_path, "--spans", str(spans))
    assert out.record.reproduction is not None
    assert out.record.reproduction.reproduced
    first_start, first_end, second_start, second_end = (
        float((spans / name).read_text()) for name in ("first.start", "first.end", "second.start", "second.end"))
    assert first_start < second_start < first_end < second_end
    varied = {v.name: (v.first, v.second) for v in out.record.reproduction.variations}
    assert varied["time"][0] < varied["time"][1]


def test_a_failed_first_build_stops_the_second(app_repo: tuple[Path, str], tmp_path: Path) -> None:
    """The first build's failure is the stage's; the second build's tree is killed, not waited for."""
    repo, sha = app_repo
    pid_file = tmp_path / "second.pid"
    started = time.monotonic()
    with pytest.raises(QualificationError) as raised:
        _build(repo, sha, tmp_path, "--first-fails", str(pid_file))
    assert raised.value.code == Code.BUILD_FAILED
    assert "the first build failed" in raised.value.message
    assert time.monotonic() - started < 30, "the producer waited for the second build's 60 s"
    # The first build failed only once the second was running: that build's process must be gone now.
    status = Path(f"/proc/{int(pid_file.read_text())}/status")
    assert not status.exists() or "\nState:\tZ" in status.read_text()


def test_the_build_gets_the_commits_time(app_repo: tuple[Path, str], tmp_path: Path) -> None:
    """SOURCE_DATE_EPOCH is the commit's time: two builds at different times embed the same time."""
    repo, sha = app_repo
    first = _build(repo, sha, tmp_path / "one", reproduce=False)
    second = _build(repo, sha, tmp_path / "two", reproduce=False)
    assert first.record.artifact.sha256 == second.record.artifact.sha256
