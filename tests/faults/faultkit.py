"""Helpers for the fault-injection suite: the chain under test, process trees from /proc, killed writers.

A producer's children that ran through ``run_bounded`` (PyInstaller, the app
under test) lead sessions of their own, so SIGKILL to the producer's process
group does not reach them. ``ProducerJob.kill`` therefore freezes the whole
tree first (SIGSTOP, walking /proc), kills the producer's group as a runner
would, lets the survivors run for a moment to see whether they die with it,
records them, and only then kills them by pid: every process killed here is
one this test started.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Platform
from support.chain import qualify

HERE = Path(__file__).resolve().parent
PRODUCER_CHILD = HERE / "producer_child.py"
PLATFORM: Platform = "linux"
# In the order a job runs them: the pipeline's own signature comes last, once every app process has ended.
STAGES = ("source gate", "build", "install", "launch probe", "journey", "sign and emit")
# A log line starts with its UTC time (producer/_progress.py); a terminal's live line has none.
_STAMP = r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ )?"
_PROGRESS = re.compile(rf"^{_STAMP}\[produce {PLATFORM}\] (?P<stage>{'|'.join(STAGES)})\s+(?P<rest>.*)$")

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="process trees are read from /proc; the chain "
                                                                "pins the linux platform")


# -- the chain under test --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class App:
    """A committed app on `main`, a local policy for it, and its keys."""

    root: Path
    repo: Path
    sha: str
    policy: Path


@dataclass(frozen=True)
class Reference:
    """The session's one real build: a producer run SIGKILLed inside PyInstaller, then a real rerun.

    ``output`` is a copy of what the app's build command wrote in the rerun (its
    archive), ``archive`` the artifact the producer made of it; ``aggregate`` and ``verify`` are the chain
    completed on the rerun's evidence.
    """

    out: Path
    output: Path
    archive: Path
    build_kill: KilledRun
    rerun: subprocess.CompletedProcess[str]
    aggregate: subprocess.CompletedProcess[str]
    verify: subprocess.CompletedProcess[str]
    seconds: float


def candidate_artifacts(out: Path) -> list[Path]:
    """The archives in ``out/artifacts``, as a release manager would pass them (hidden files are not candidates)."""
    folder = out / "artifacts"
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def produce_argv(app: App, out: Path, run_id: str) -> list[str]:
    return ["produce", "--policy", str(app.policy), "--platform", PLATFORM, "--out", str(out), "--run-id", run_id]


def verify(app: App, evidence: Path, artifacts: list[Path], *extra: str | Path) -> subprocess.CompletedProcess[str]:
    args: list[str | Path] = ["verify", "--policy", app.policy, "--evidence", evidence]
    for artifact in artifacts:
        args += ["--artifact", artifact]
    return qualify(*args, *extra)


def codes(text: str) -> set[str]:
    return set(re.findall(r"\b(QE_[A-Z_]+)\b", text))


# -- processes, read from /proc --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int  # clock ticks since boot: tells a pid apart from a later process that reuses it
    cmdline: str


def _read_proc(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rindex(")") + 2:].split()
    return Proc(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]),
                raw.replace(b"\0", b" ").decode(errors="replace").strip()[:300])


def process_table() -> dict[int, Proc]:
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (proc := _read_proc(int(entry.name))) is not None:
            table[proc.pid] = proc
    return table


def descendants(root: int, table: dict[int, Proc] | None = None) -> dict[int, Proc]:
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: dict[int, Proc] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found[pid] = table[pid]
            todo.extend(children.get(pid, []))
    return found


def alive(proc: Proc) -> bool:
    now = _read_proc(proc.pid)
    return now is not None and now.start == proc.start and now.state != "Z"


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def freeze_tree(root: int) -> dict[int, Proc]:
    """SIGSTOP ``root``'s process group and every descendant, until no new process appears."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(root, signal.SIGSTOP)
    frozen: dict[int, Proc] = {}
    quiet_rounds = 0
    # A process forked just before its parent stopped shows up one round later; two quiet rounds settle it.
    while quiet_rounds < 2:
        new = {pid: p for pid, p in descendants(root).items() if pid not in frozen}
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        frozen.update(new)
        quiet_rounds = quiet_rounds + 1 if not new else 0
        time.sleep(0.02)
    return frozen


# -- one producer child ----------------------------------------------------------------------------------------

@dataclass
class KillReport:
    stage: str
    stderr: str
    last_line: str
    # Processes of the job that outlived SIGKILL to the producer's own group (then killed here).
    survivors: list[str]
    # What the job left in its temporary folder (TMPDIR).
    temp_leftovers: list[str]


@dataclass
class ProducerJob:
    """``qualify produce`` in a child leading its own session, its stderr read line by line."""

    app: App
    out: Path
    run_id: str
    cached: Reference | None = None
    hold_at: str | None = None
    fsize_at_emit: int | None = None
    plain: bool = False
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tmp = self.app.root / "tmp" / self.run_id
        self.tmp.mkdir(parents=True)
        self.marker = self.tmp.parent / f"{self.run_id}.holding"
        self.marker.unlink(missing_ok=True)
        env = dict(os.environ, TMPDIR=str(self.tmp))
        for name in [name for name in env if name.startswith("FAULTS_")]:
            env.pop(name)
        if self.cached is not None:
            env["FAULTS_CACHED_OUTPUT"] = str(self.cached.output)
        if self.hold_at is not None:
            env["FAULTS_HOLD_AT"] = self.hold_at
            env["FAULTS_HOLD_MARKER"] = str(self.marker)
        if self.fsize_at_emit is not None:
            env["FAULTS_FSIZE_AT_EMIT"] = str(self.fsize_at_emit)
        entry = ["-m", "desktop_qualify.qualify_cli"] if self.plain else [str(PRODUCER_CHILD)]
        self.proc = subprocess.Popen([sys.executable, *entry, *produce_argv(self.app, self.out, self.run_id)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, start_new_session=True)
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._stdout: list[str] = []
        self._readers = [threading.Thread(target=self._read_stderr, daemon=True),
                         threading.Thread(target=self._read_stdout, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        self._stdout.extend(self.proc.stdout)

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def progress(self) -> list[tuple[str, str]]:
        """(stage, rest of line) for every progress line so far."""
        return [(m["stage"], m["rest"]) for line in self.lines if (m := _PROGRESS.match(line))]

    def wait_for_stage(self, stage: str, timeout: float = 300) -> None:
        """Return once ``stage``'s start line is written; fail if the job ends or lingers first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {stage!r} start within {timeout}s:\n{self.stderr}")
            if line is None:
                pytest.fail(f"the producer ended (exit {self.proc.wait()}) before {stage!r} started:\n{self.stderr}")
            match = _PROGRESS.match(line)
            if match and match["stage"] == stage and match["rest"] == "...":
                return

    def wait_until(self, what: str, condition: Callable[[], bool], timeout: float = 120,
                   interval: float = 0.05) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                pytest.fail(f"the producer ended (exit {self.proc.returncode}) before {what}:\n{self.stderr}")
            if time.monotonic() > deadline:
                pytest.fail(f"not {what} within {timeout}s:\n{self.stderr}")
            time.sleep(interval)

    def wait_held(self) -> None:
        assert self.hold_at is not None
        self.wait_until(f"held at {self.hold_at!r}", self.marker.exists)

    def child_running(self, needle: str, *, leading: bool = False) -> bool:
        """Whether a process of the job has ``needle`` in its command line (``leading``: as its start).

        ``leading`` tells the app itself from the confinement wrapper (bubblewrap) that names it as its command.
        """
        return any(p.cmdline.startswith(needle) if leading else needle in p.cmdline
                   for p in descendants(self.proc.pid).values())

    def kill(self, stage: str) -> KillReport:
        """SIGKILL the producer's process group; report, then kill, what outlived it."""
        frozen = freeze_tree(self.proc.pid)
        with contextlib.suppress(ProcessLookupError):  # it may have ended on its own, which the caller checks
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        others = [p for p in frozen.values() if p.pgid != self.proc.pid]
        # Let them run: a child that dies with its parent (PR_SET_PDEATHSIG, a watchdog) gets its chance.
        for proc in others:
            _signal(proc.pid, signal.SIGCONT)
        # Polled for up to 5 s rather than one fixed pause: on a loaded machine the watchdog may need more than
        # half a second to be scheduled, and a real survivor is still alive at the end of any grace period.
        grace = time.monotonic() + 5
        while any(alive(p) for p in others) and time.monotonic() < grace:
            time.sleep(0.05)
        survivors = [p for p in others if alive(p)]
        groups = {p.pgid for p in survivors}
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        for proc in survivors:
            _signal(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(p.pgid in groups and p.state != "Z" for p in process_table().values()):
            assert time.monotonic() < deadline, "the killed job's processes did not go away"
            time.sleep(0.05)
        for reader in self._readers:
            reader.join(timeout=10)
        leftovers = sorted(str(p.relative_to(self.tmp)) for p in self.tmp.iterdir())
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.marker.unlink(missing_ok=True)
        last = next((line for line in reversed(self.lines) if _PROGRESS.match(line)), "")
        return KillReport(stage, self.stderr, last, [p.cmdline[:160] for p in survivors], leftovers)

    def finish(self, timeout: float = 600) -> tuple[int, str, str]:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill("timeout")
            pytest.fail(f"the producer did not finish within {timeout}s:\n{self.stderr}")
        for reader in self._readers:
            reader.join(timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return code, "".join(self._stdout), self.stderr


@dataclass
class KilledRun:
    """One producer run SIGKILLed inside a stage, and what its output folder held afterwards."""

    report: KillReport
    # The run's progress lines up to its kill: (stage, outcome); an outcome of "..." is a start.
    progress: list[tuple[str, str]]
    evidence: list[str]
    # `qualify verify` on the evidence folder, when there is one.
    verify: subprocess.CompletedProcess[str] | None
    seconds: float


# Stages that take milliseconds: held at their start (producer_child.py) and killed there, every time.
HELD = ("source gate", "sign and emit")


def kill_in_stage(app: App, out: Path, stage: str, run_id: str, *, cached: Reference | None,
                  hold: bool | None = None) -> KilledRun:
    """Start a producer into ``out`` and SIGKILL it inside ``stage``.

    Held stages are killed at their start. The build is killed with PyInstaller
    running, a few seconds in (with ``cached`` None, the real one). Install,
    launch probe and journey are killed as they run, the latter two while the
    installed app runs.
    """
    started = time.monotonic()
    hold = stage in HELD if hold is None else hold
    job = ProducerJob(app, out, run_id, cached=cached, hold_at=stage if hold else None, plain=cached is None)
    try:
        if hold:
            job.wait_held()
        else:
            job.wait_for_stage(stage)
        if stage == "build" and not hold:
            job.wait_until("PyInstaller running", lambda: job.child_running("PyInstaller"))
            time.sleep(3)
        if stage in ("launch probe", "journey"):
            # The probe's app runs for a few hundred milliseconds: look often, and for this stage's command only.
            argument = {"launch probe": "probe", "journey": "journey"}[stage]
            command = f"{out / 'work' / PLATFORM / 'install'}/skillhost/skillhost {argument}"
            job.wait_until(f"the installed app running {command!r}",
                           lambda: job.child_running(command, leading=True), interval=0.01)
    except BaseException:
        job.kill("error")
        raise
    report = job.kill(stage)
    evidence = out / "evidence"
    checked = verify(app, evidence, candidate_artifacts(out)) if evidence.is_dir() else None
    return KilledRun(report, job.progress(), listing(evidence), checked, time.monotonic() - started)


# -- files -----------------------------------------------------------------------------------------------------

def listing(folder: Path) -> list[str]:
    """Every path under ``folder``, relative, sorted; [] when it does not exist."""
    if not folder.exists():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def snapshot(folder: Path) -> dict[str, bytes]:
    """The bytes of every file under ``folder`` (for small trees: evidence and records)."""
    return {rel: (folder / rel).read_bytes() for rel in listing(folder) if (folder / rel).is_file()}


def kill_inside_write_atomic(target: Path, data: bytes, tmp: Path) -> None:
    """Run write_atomic(target, data) in a child and SIGKILL it inside its fsync, after the data was written.

    What is left behind is exactly what a job killed mid-write leaves.
    """
    marker = tmp / f"{target.name}.in-fsync"
    code = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from desktop_qualify.qualify_files import write_atomic\n"
        "def fsync(fd):\n"
        "    Path(sys.argv[3]).touch()\n"
        "    time.sleep(3600)\n"
        "os.fsync = fsync\n"
        "write_atomic(Path(sys.argv[1]), Path(sys.argv[2]).read_bytes())\n"
    )
    payload = tmp / f"{target.name}.payload"
    payload.write_bytes(data)
    child = subprocess.Popen([sys.executable, "-c", code, str(target), str(payload), str(marker)],
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the writer ended before it reached fsync"
            assert time.monotonic() < deadline, "the writer never reached fsync"
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    payload.unlink()
    marker.unlink()


def tampered_archive(archive: Path, dest: Path, executable: str, marker: Path) -> Path:
    """A valid archive like ``archive`` whose ``executable`` is a script that creates ``marker`` when run.

    If anything ever runs what this archive installs, the marker says so.
    """
    script = f"#!/bin/sh\necho ran > '{marker}'\n".encode()
    with tarfile.open(archive, "r:gz") as source, tarfile.open(dest, "w:gz", compresslevel=1) as sink:
        for member in source:
            if member.name == executable:
                member.size = len(script)
                sink.addfile(member, io.BytesIO(script))
            else:
                sink.addfile(member, source.extractfile(member) if member.isfile() else None)
    return dest


def flip_byte(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 1]))


# -- full disks ------------------------------------------------------------------------------------------------

# Sets the limit, then becomes `python -m desktop_qualify.qualify_cli ARGS`: an ignored signal and a resource limit both
# survive exec, and no preexec_fn has to run between fork and exec in a threaded test process.
_WITH_FILE_SIZE_LIMIT = (
    "import os, resource, signal, sys\n"
    "limit = int(sys.argv[1])\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'desktop_qualify.qualify_cli', *sys.argv[2:]])\n"
)


def qualify_with_file_size_limit(limit: int, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``qualify ARGS`` in a child that may write no file beyond ``limit`` bytes (RLIMIT_FSIZE).

    SIGXFSZ is ignored (CPython does that at start-up too), so a write past the
    limit fails with EFBIG, as it fails with ENOSPC on a full disk, instead of
    killing the process.
    """
    return subprocess.run([sys.executable, "-c", _WITH_FILE_SIZE_LIMIT, str(limit), *map(str, args)],
                          capture_output=True, text=True, timeout=300, check=False)


# Runs inside a private mount namespace, on a fresh tmpfs: writes the given files, fills what is left, runs
# the command, and reports what the command left on the tmpfs (which vanishes with the namespace).
_ON_FULL_TMPFS = r"""
import hashlib, json, os, subprocess, sys
mount, spec = sys.argv[1], json.loads(sys.argv[2])
for name, text in spec["files"].items():
    with open(os.path.join(mount, name), "w") as handle:
        handle.write(text)
fd = os.open(os.path.join(mount, "filler"), os.O_WRONLY | os.O_CREAT)
try:
    while os.write(fd, b"\0" * 512):
        pass
except OSError:
    pass
os.close(fd)
done = subprocess.run(spec["argv"], capture_output=True, text=True, check=False)
files = {}
for name in sorted(os.listdir(mount)):
    with open(os.path.join(mount, name), "rb") as handle:
        data = handle.read()
    files[name] = "filler" if name == "filler" else data.decode(errors="replace")
print(json.dumps({"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "files": files}))
"""


def tmpfs_unavailable() -> str | None:
    """Why a private, size-limited tmpfs cannot be mounted here (``unshare -rm``), or None when it can."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return "needs Linux and unshare(1)"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"'
                            ' && umount "$d" && rmdir "$d"'], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a user namespace here: {probe.stderr.strip()[:200]}"
    return None


@dataclass(frozen=True)
class FullDiskRun:
    rc: int
    stdout: str
    stderr: str
    files: dict[str, str]  # what the tmpfs held afterwards, by name ("filler" for the filler)


def run_on_full_tmpfs(mount: Path, argv: list[str], files: dict[str, str] | None = None) -> FullDiskRun:
    """Run ``argv`` with ``mount`` a 64 KiB tmpfs holding ``files`` and otherwise full."""
    mount.mkdir(parents=True, exist_ok=True)
    spec = json.dumps({"argv": argv, "files": files or {}})
    mount_then_run = 'mount -t tmpfs -o size=64k tmpfs "$1" && shift && exec "$@"'
    done = subprocess.run(["unshare", "-rm", "sh", "-c", mount_then_run, "sh", str(mount),
                           sys.executable, "-c", _ON_FULL_TMPFS, str(mount), spec],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"the tmpfs driver failed:\n{done.stdout}\n{done.stderr}"
    report = json.loads(done.stdout)
    return FullDiskRun(report["rc"], report["stdout"], report["stderr"], report["files"])
