"""Where the app runs from: frozen bundle or source tree; build info; platform."""

import json
import os
import re
import sys
from collections.abc import Container, Iterable
from pathlib import Path
from typing import TypedDict

from skillhost._errors import SkillError
from skillhost.os_sandbox import worker_interpreter

_HEX_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_MAX_BUILD_INFO = 4096


class BuildInfo(TypedDict):
    """The embedded build identity, validated and truncated."""

    build_sha: str
    built_at: str
    source_ref: str


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False)) and hasattr(sys, "_MEIPASS")


def package_dir() -> Path:
    """Directory holding the package data (bundled skills, catalog, build info)."""
    if is_frozen():
        return Path(sys._MEIPASS) / "skillhost"  # type: ignore[attr-defined]
    return Path(__file__).resolve().parent


def platform_name() -> str:
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux"


def worker_command() -> list[str]:
    """Fixed worker entry point: the same binary with the ``worker`` subcommand."""
    if is_frozen():
        return [sys.executable, "worker"]
    # Windows from source: the base interpreter itself, never a venv's redirector (``worker_interpreter``).
    return [worker_interpreter(), "-s", "-B", "-m", "skillhost", "worker"]


def validate_build_info(info: object) -> BuildInfo:
    if not isinstance(info, dict):
        raise SkillError("CC_SKILL_BUILD_INFO_INVALID", "build info is not a JSON object")
    sha = info.get("build_sha")
    if not isinstance(sha, str) or not _HEX_SHA.match(sha):
        raise SkillError("CC_SKILL_BUILD_INFO_INVALID", "build_sha is not 40/64 lowercase hex")
    built_at = info.get("built_at", "")
    source_ref = info.get("source_ref", "")
    if not isinstance(built_at, str) or not isinstance(source_ref, str):
        raise SkillError("CC_SKILL_BUILD_INFO_INVALID", "built_at/source_ref must be strings")
    return {"build_sha": sha, "built_at": built_at[:64], "source_ref": source_ref[:200]}


def _read_build_info(path: Path) -> BuildInfo:
    try:
        with path.open("rb") as fh:
            raw = fh.read(_MAX_BUILD_INFO + 1)
    except OSError as exc:
        raise SkillError("CC_SKILL_BUILD_INFO_MISSING", f"cannot read build info: {exc.strerror}") from None
    if len(raw) > _MAX_BUILD_INFO:
        raise SkillError("CC_SKILL_BUILD_INFO_INVALID", "build info too large")
    try:
        info = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise SkillError("CC_SKILL_BUILD_INFO_INVALID", "build info is not valid JSON") from None
    return validate_build_info(info)


def build_info() -> BuildInfo:
    if is_frozen():
        return _read_build_info(package_dir() / "build_info.json")
    env_path = os.environ.get("QUALIFY_BUILD_INFO")
    if env_path:
        return _read_build_info(Path(env_path))
    return {"build_sha": "0" * 40, "built_at": "", "source_ref": ""}


def worker_env() -> dict[str, str]:
    """Minimal environment for the worker: only what the platform needs, no host secrets."""
    env: dict[str, str] = {}
    if platform_name() == "windows":
        for key in ("SYSTEMROOT", "WINDIR"):
            val = os.environ.get(key)
            if val:
                env[key] = val
    if not is_frozen():
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONNOUSERSITE"] = "1"
    return env


# Keys the interpreter or the PyInstaller bootloader may add on its own.
_ENV_ADDED_PREFIXES = ("_PYI", "_MEI", "__PYVENV_LAUNCHER__", "__CF_USER_TEXT_ENCODING")
_ENV_ADDED_KEYS = {"LC_CTYPE"}
# The frozen bootloader points the dynamic loader at the bundle's own _internal folder.
_FROZEN_ADDED_KEYS = {
    "LD_LIBRARY_PATH",
    "LD_LIBRARY_PATH_ORIG",
    "DYLD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH_ORIG",
    "DYLD_FRAMEWORK_PATH",
    "DYLD_FRAMEWORK_PATH_ORIG",
    "LIBPATH",
    "LIBPATH_ORIG",
}


def unexpected_worker_env_keys(passed: Container[str], observed_keys: Iterable[str]) -> list[str]:
    out: list[str] = []
    for key in observed_keys:
        if key in passed or key in _ENV_ADDED_KEYS or key.upper() in passed:
            continue
        if is_frozen() and key in _FROZEN_ADDED_KEYS:
            continue
        if key.startswith(_ENV_ADDED_PREFIXES):
            continue
        out.append(key)
    return sorted(out)
