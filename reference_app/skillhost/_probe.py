"""Launch probe: version, embedded build SHA, own digest, and the named checks (app contract v2).

The record is a ``qualify-probe`` v2 record (docs/app-contract.md): the checks
``worker-entry-resolvable``, ``isolation`` and ``catalog-verified``, each with
whether it passed, and the worker's isolation layers. The skill host still
refuses to start without them: a failed check is also a refusal (exit 3) with
its ``CC_SKILL_*`` code, after the record says which check failed.
"""

import os
import stat
import sys
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import TypedDict

from skillhost._canon import sha256_file
from skillhost._errors import SkillError
from skillhost._runtime import (
    build_info,
    is_frozen,
    package_dir,
    platform_name,
    unexpected_worker_env_keys,
    worker_command,
)
from skillhost._version import __version__
from skillhost.host import WorkerSelfTest, self_test
from skillhost.os_sandbox import Layer, missing_layers
from skillhost.packaging import verify_catalog


class Check(TypedDict):
    name: str
    passed: bool
    detail: str


class ProbeReport(TypedDict):
    kind: str
    version: int
    app_version: str
    build_sha: str
    platform: str
    executable_sha256: str
    checks: list[Check]
    isolation_layers: list[Layer]


def _worker_entry_resolvable() -> None:
    exe = worker_command()[0]
    try:
        st = Path(exe).stat()
    except OSError:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker entry executable is missing") from None
    if not stat.S_ISREG(st.st_mode):
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker entry is not a regular file")
    if not is_frozen() and find_spec("skillhost.worker._main") is None:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker module not found")


def _isolation() -> WorkerSelfTest:
    try:
        answer = self_test()
    except OSError as exc:
        # The start itself refused, before the worker ran: a refusal of the sandbox's own (Windows: the install
        # folder lacks its grant, CC_SKILL_INSTALL_GRANT_MISSING) keeps its code; any other is the isolation's.
        code = getattr(exc, "code", None)
        code = code if isinstance(code, str) and code.startswith("CC_SKILL_") else "CC_SKILL_ISOLATION_UNAVAILABLE"
        raise SkillError(code, f"the worker could not be started: {exc}") from None
    if not isinstance(answer.get("pid"), int) or answer["pid"] == os.getpid():
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker did not run in a separate process")
    if os.name == "posix" and answer.get("limits_applied") is not True:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker could not apply resource limits")
    # Linux must cap the worker's address space; macOS may refuse RLIMIT_AS and only reports it.
    if sys.platform.startswith("linux") and answer.get("memory_limited") is not True:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker could not limit its memory (RLIMIT_AS)")
    if answer.get("frozen") is not is_frozen():
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker is not the same build as the host")
    extra = unexpected_worker_env_keys(dict.fromkeys(answer.get("_env_passed", [])), answer.get("env_keys", []))
    if extra:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", f"worker environment not minimal: {extra[:5]}")
    missing = missing_layers(answer.get("isolation_layers", []), platform_name())
    if missing:
        # Fail closed (README, "Operating-system sandbox"): the app does not start without its sandbox.
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", f"required sandbox layer(s) not applied: {missing}")
    return answer


def _catalog_verified() -> None:
    try:
        verify_catalog(package_dir())
    except SkillError as exc:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", exc.message) from None


def _check(name: str, run: Callable[[], object], refusals: list[SkillError]) -> Check:
    try:
        run()
    except SkillError as exc:
        refusals.append(exc)
        return {"name": name, "passed": False, "detail": f"{exc.code}: {exc.message}"[:400]}
    return {"name": name, "passed": True, "detail": "ok"}


def run_probe() -> tuple[ProbeReport, int, SkillError | None]:
    """The probe's record, its exit status, and the first refusal (the app does not start without its checks)."""
    info = build_info()
    refusals: list[SkillError] = []
    answers: list[WorkerSelfTest] = []
    entry = _check("worker-entry-resolvable", _worker_entry_resolvable, refusals)
    # Without a worker entry there is no worker to test: the isolation check fails without starting one.
    isolation: Check = _check("isolation", lambda: answers.append(_isolation()), refusals) if entry["passed"] \
        else {"name": "isolation", "passed": False, "detail": "not run: the worker entry is not resolvable"}
    checks = [entry, isolation, _check("catalog-verified", _catalog_verified, refusals)]
    report: ProbeReport = {
        "kind": "qualify-probe",
        "version": 2,
        "app_version": __version__,
        "build_sha": info["build_sha"],
        "platform": platform_name(),
        "executable_sha256": sha256_file(sys.executable),
        "checks": checks,
        "isolation_layers": answers[0].get("isolation_layers", []) if answers else [],
    }
    return report, (3 if refusals else 0), (refusals[0] if refusals else None)
