"""Windows: app code runs in a job object under a restricted, low-integrity token (``_windows_launcher``).

The producer's side: it makes the stage's folders reachable by the restricted token and nothing else, writes
the launch plan to a folder of its own (closed to the token: it grants only the runner user), and starts the
launcher, whose report ``finish`` reads back. Every command through an injected runner, so the tests hold
each ``icacls`` command line:

* each writable folder grants RESTRICTED (S-1-5-12, one of the token's restricting SIDs) modify access,
  inherited, and is labelled Low (``/setintegritylevel (OI)(CI)low``): a Low token can write nowhere else of
  medium integrity;
* each readable input grants RESTRICTED read and execute; the toolchain is read through the Users and
  Everyone grants Windows already gives program folders;
* each protected path is read back (``icacls PATH /save``, SDDL, so no localised account name is parsed) and
  refused when it allows any of the token's restricting SIDs (Everyone, Users, RESTRICTED): it would be
  readable. This check runs after the grants, so a grant that reached a protected path is caught too.

A job object and a token do not confine sockets: the stage keeps the machine's network, and the facts say so
whatever the policy asked (the verifier then refuses a stage that had to be offline).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._checks import bound_paths, stage_environment
from ._stage import ConfinedCommand, Confinement, ConfinementError, ConfinementFacts, StageSandbox, sealed
from ._windows_structs import BREAKAWAY_OK, KILL_ON_JOB_CLOSE, LOW_INTEGRITY, RESTRICTED, SILENT_BREAKAWAY_OK

Runner = Callable[..., "subprocess.CompletedProcess[bytes]"]

LAUNCHER = "desktop_qualify.producer.confinement._windows_launcher"
# The SIDs the restricted token's second check passes through (SDDL abbreviations and full forms).
OPEN_TO_TOKEN = frozenset({"WD", "BU", "RC", "S-1-1-0", "S-1-5-32-545", RESTRICTED})
_ACE = re.compile(r"\(([A-Z]*);([A-Z]*);([^;()]*);([^;()]*);([^;()]*);([^;()]*)(?:;[^()]*)?\)")
_ALLOW = frozenset({"A", "OA", "XA", "ZA"})
_REPORT_CAP = 64 * 1024
_TIMEOUT = 120


class JobObjectConfinement(Confinement):
    """The Windows adapter (module docstring)."""

    mechanism = "job-object"

    def __init__(self, runner: Runner | None = None, *, platform: str = sys.platform, python: str = sys.executable,
                 icacls: str | None = None, workdir: Callable[[], str] | None = None,
                 is_dir: Callable[[Path], bool] = Path.is_dir, exists: Callable[[Path], bool] = Path.exists) -> None:
        self._runner: Runner = runner if runner is not None else subprocess.run
        self._platform, self._python = platform, python
        self._icacls = icacls if icacls is not None else shutil.which("icacls")
        self._workdir = workdir or (lambda: tempfile.mkdtemp(prefix="qualify-stage-"))
        self._is_dir, self._exists = is_dir, exists

    def unavailable(self) -> str | None:
        """What is missing: Windows itself, or ``icacls`` (which opens the stage's folders to the token)."""
        if self._platform != "win32":
            return "job objects confine app code on Windows only"
        if self._icacls is None:
            return "icacls is not on PATH (it is part of Windows: C:\\Windows\\System32\\icacls.exe)"
        return None

    def wrap(self, argv: Sequence[str], sandbox: StageSandbox, env: Mapping[str, str]) -> ConfinedCommand:
        """The launcher's command line; its plan and report live in a folder of the producer's own."""
        why = self.unavailable()
        if why is not None or self._icacls is None:
            raise ConfinementError(why or "icacls is missing")
        if not argv:
            raise ConfinementError("no command to confine")
        bound = bound_paths(sandbox)
        private = {"USERPROFILE": str(sandbox.home), "HOME": str(sandbox.home), "TEMP": str(sandbox.tmp),
                   "TMP": str(sandbox.tmp)}
        # Windows' names ignore case: a caller's "Temp" must not stand beside the stage's "TEMP".
        child_env = stage_environment({k: v for k, v in env.items() if k.upper() not in private}, private)
        program = argv[0] if Path(argv[0]).is_absolute() else shutil.which(argv[0], path=_get(child_env, "PATH"))
        if program is None:
            raise ConfinementError(f"{argv[0]} is not found on the stage's PATH")
        for what, path in bound:
            for command in self.grant_commands(what, path):
                self._icacls_run(command)
        folder = Path(self._workdir())
        try:
            for path in sealed(sandbox):
                if self._exists(path):
                    self._check_protected(path, folder)
            plan, report = folder / "plan.json", folder / "report.json"
            plan.write_text(json.dumps({"argv": [program, *argv[1:]], "env": child_env,
                                        "cwd": str(sandbox.cwd or sandbox.home)}), encoding="utf-8")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        start = [self._python, "-I", "-m", LAUNCHER, "--plan", str(plan), "--report", str(report)]

        def finish() -> ConfinementFacts:
            return facts_from_report(sandbox, _read_report(report))

        def close() -> None:
            shutil.rmtree(folder, ignore_errors=True)

        return ConfinedCommand(argv=start, env=dict(child_env), finish=finish, release=close)

    def grant_commands(self, what: str, path: Path) -> list[list[str]]:
        """The ``icacls`` commands that open ``path`` (a ``what`` path of the stage) to the restricted token."""
        icacls = self._icacls or "icacls"
        inherit = "(OI)(CI)" if self._is_dir(path) else ""
        if what == "writable":
            return [[icacls, str(path), "/grant", f"*{RESTRICTED}:{inherit}M", "/q"],
                    [icacls, str(path), "/setintegritylevel", f"{inherit}low", "/q"]]
        if what == "readable":
            return [[icacls, str(path), "/grant", f"*{RESTRICTED}:{inherit}RX", "/q"]]
        return []  # the toolchain: program folders already grant Users and Everyone read and execute

    def _icacls_run(self, command: list[str]) -> subprocess.CompletedProcess[bytes]:
        try:
            done = self._runner(command, capture_output=True, check=False, timeout=_TIMEOUT,
                                stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ConfinementError(f"icacls could not be run: {exc}") from exc
        if done.returncode != 0:
            said = (done.stderr or done.stdout or b"").decode("utf-8", errors="replace").strip()[:200]
            raise ConfinementError(f"icacls {' '.join(command[1:])} failed: {said or f'exit {done.returncode}'}")
        return done

    def _check_protected(self, path: Path, folder: Path) -> None:
        saved = folder / "acl.txt"
        self._icacls_run([self._icacls or "icacls", str(path), "/save", str(saved), "/q"])
        try:
            text = saved.read_bytes().decode("utf-16-le", errors="replace").lstrip("\ufeff")
        except OSError as exc:
            raise ConfinementError(f"the ACL of {path} could not be read back") from exc
        finally:
            saved.unlink(missing_ok=True)
        opened = open_aces(text)
        if opened:
            raise ConfinementError(f"the protected path {path} allows {', '.join(opened)}, through which the "
                                   "restricted token reads: remove those entries (icacls PATH /inheritance:r ...)")


def open_aces(sddl: str) -> list[str]:
    """The allow entries of an SDDL text that the restricted token's second check passes through."""
    return [f"({'; '.join(ace)})" for ace in _ACE.findall(sddl) if ace[0] in _ALLOW and ace[2]
            and ace[5] in OPEN_TO_TOKEN]


def _get(env: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in env.items() if k.upper() == name), None)


def _read_report(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(_REPORT_CAP + 1)
    except OSError:
        return None
    if len(data) > _REPORT_CAP:
        return None
    try:
        report = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def facts_from_report(sandbox: StageSandbox, report: Mapping[str, Any] | None) -> ConfinementFacts:
    """The layers the launcher's report confirms; a process left in the job after the stage is an error."""
    phase = report.get("phase") if report else None
    if report is None or phase not in ("started", "ended"):
        why = f"at {report.get('failed_call')}" if report else "with no report"
        return ConfinementFacts(sandbox.stage, "job-object", (), True,
                                f"the launcher did not start the command confined ({why})")
    if phase == "ended" and report.get("active_after") != 0:
        raise ConfinementError(f"{report.get('active_after')} process(es) of the stage survived the job's end")
    layers = []
    if report.get("job") is True and report.get("assigned") is True:
        layers.append("job-object")
    flags = report.get("limit_flags")
    if isinstance(flags, int) and flags & KILL_ON_JOB_CLOSE and not flags & (BREAKAWAY_OK | SILENT_BREAKAWAY_OK):
        layers.append("kill-on-job-close")
    if report.get("restricted") is True and report.get("privileges") == "max-disabled":
        layers.append("restricted-token")
    if report.get("integrity") == LOW_INTEGRITY:
        layers.append("low-integrity")
    if report.get("home") == str(sandbox.home):
        layers.append("private-home")
    if report.get("tmp") == str(sandbox.tmp):
        layers.append("private-tmp")
    # Ended: the launcher ended the job and saw it empty. Started only: the launcher was killed, and with it
    # the one handle of a kill-on-close job, so the kernel ended every process in it.
    if "job-object" in layers and "kill-on-job-close" in layers:
        layers.append("dies-with-stage")
    detail = (f"{phase}; limit flags {flags:#x}; " if isinstance(flags, int) else f"{phase}; ") + \
        f"integrity {report.get('integrity')}; network: not cut (a job object does not confine sockets)"
    return ConfinementFacts(sandbox.stage, "job-object", tuple(layers), True, detail)


__all__ = ["LAUNCHER", "OPEN_TO_TOKEN", "JobObjectConfinement", "facts_from_report", "open_aces"]
