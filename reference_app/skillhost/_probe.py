"""Launch probe: version, embedded build SHA, own digest, worker entry, catalog, isolation."""

import os
import stat
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import TypedDict

from skillhost import __version__
from skillhost._canon import sha256_file
from skillhost._catalog import verify
from skillhost._errors import SkillError
from skillhost._os_sandbox import Layer, missing_layers
from skillhost._runner import WorkerSelfTest, self_test
from skillhost._runtime import (
    build_info,
    is_frozen,
    package_dir,
    platform_name,
    unexpected_worker_env_keys,
    worker_command,
)


class ProbeReport(TypedDict):
    kind: str
    version: int
    app_version: str
    build_sha: str
    built_at: str
    platform: str
    frozen: bool
    executable_sha256: str
    worker_entry_resolvable: bool
    catalog_verified: bool
    isolation_available: bool
    isolation_layers: list[Layer]


def _worker_entry_resolvable() -> None:
    exe = worker_command()[0]
    try:
        st = Path(exe).stat()
    except OSError:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker entry executable is missing") from None
    if not stat.S_ISREG(st.st_mode):
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker entry is not a regular file")
    if not is_frozen() and find_spec("skillhost._worker") is None:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker module not found")


def _isolation() -> WorkerSelfTest:
    answer = self_test()
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


def run_probe() -> tuple[ProbeReport, int]:
    info = build_info()
    _worker_entry_resolvable()
    answer = _isolation()
    try:
        verify(package_dir())
    except SkillError as exc:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", exc.message) from None
    report: ProbeReport = {
        "kind": "skillhost-probe",
        "version": 1,
        "app_version": __version__,
        "build_sha": info["build_sha"],
        "built_at": info["built_at"],
        "platform": platform_name(),
        "frozen": is_frozen(),
        "executable_sha256": sha256_file(sys.executable),
        "worker_entry_resolvable": True,
        "catalog_verified": True,
        "isolation_available": True,
        "isolation_layers": answer.get("isolation_layers", []),
    }
    return report, 0
