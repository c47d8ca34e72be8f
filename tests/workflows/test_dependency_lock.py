"""requirements/pipeline.txt covers what pyproject.toml asks for, with hashes, so CI installs only locked files.

The workflows install the lock with `pip install --require-hashes`, then the
project with `--no-deps --no-build-isolation`: a dependency or a build
requirement that the lock does not pin (or pins outside pyproject's range)
would make that install fail on a runner, so it fails here first.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements" / "pipeline.txt"
_ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)(?:\s*;\s*(?P<marker>[^\\]+?))?\s*\\?$")
_HASH = re.compile(r"^\s+--hash=sha256:[0-9a-f]{64}\s*\\?$")
# The runners' interpreters: what the lock must cover.
RUNNERS = {
    "linux": {"sys_platform": "linux", "platform_system": "Linux"},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin"},
    "windows": {"sys_platform": "win32", "platform_system": "Windows"},
}


def parse_lock(text: str) -> dict[str, tuple[Version, Marker | None, int]]:
    """name -> (pinned version, marker, number of hashes); a line the lock format does not allow is refused."""
    entries: dict[str, tuple[Version, Marker | None, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if _HASH.match(line) and current is not None:
            version, marker, hashes = entries[current]
            entries[current] = (version, marker, hashes + 1)
            continue
        match = _ENTRY.match(line)
        if match is None:
            raise ValueError(f"{LOCK.name}: not a pinned entry or a hash: {line!r}")
        current = canonicalize_name(match["name"])
        marker = Marker(match["marker"]) if match["marker"] else None
        entries[current] = (Version(match["version"]), marker, 0)
    return entries


def wanted(pyproject: dict[str, object]) -> list[Requirement]:
    project = pyproject["project"]
    build = pyproject["build-system"]
    assert isinstance(project, dict)
    assert isinstance(build, dict)
    return [Requirement(r) for r in (*project["dependencies"], *build["requires"])]


def lock_problems(pyproject: dict[str, object], lock_text: str) -> list[str]:
    entries = parse_lock(lock_text)
    problems = [f"{name} has no hash" for name, (_, _, hashes) in entries.items() if hashes == 0]
    for requirement in wanted(pyproject):
        entry = entries.get(canonicalize_name(requirement.name))
        if entry is None:
            problems.append(f"{requirement.name} is not in the lock")
            continue
        version, marker, _ = entry
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name} is locked at {version}, outside {requirement.specifier}")
        for runner, environment in RUNNERS.items():
            if marker is not None and not marker.evaluate({**environment, "python_version": "3.11"}):
                problems.append(f"{requirement.name} is locked for some platforms only, not {runner}")
    return problems


@pytest.fixture(scope="module")
def pyproject() -> dict[str, object]:
    return tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))


def test_the_lock_covers_pyprojects_dependencies_with_hashes(pyproject: dict[str, object]) -> None:
    assert lock_problems(pyproject, LOCK.read_text("utf-8")) == []


def test_the_lock_holds_a_wheel_for_each_runner_platform_when_markers_say_so() -> None:
    entries = parse_lock(LOCK.read_text("utf-8"))
    # PyInstaller's platform helpers: locked under markers, so each runner gets its own.
    for name, runner in (("pefile", "windows"), ("pywin32-ctypes", "windows"), ("macholib", "macos")):
        _, marker, hashes = entries[name]
        assert marker is not None
        assert hashes > 0
        assert marker.evaluate({**RUNNERS[runner], "python_version": "3.11"})
        assert not marker.evaluate({**RUNNERS["linux"], "python_version": "3.11"})


def _without(lock: str, name: str) -> str:
    return re.sub(rf"(?ms)^{re.escape(name)}==.*?(?=^\S)", "", lock)


def _unhashed(lock: str, name: str) -> str:
    lines, out, inside = lock.splitlines(), [], False
    for line in lines:
        if line.startswith(f"{name}=="):
            inside = True
            out.append(line.removesuffix(" \\"))
        elif inside and line.lstrip().startswith("--hash="):
            continue
        else:
            inside = False
            out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("name", "change"), [
    ("a new dependency the lock lacks",
     lambda p, lock: (p["project"]["dependencies"].append("tomli-w>=1.0"), lock)[1]),
    ("a dependency dropped from the lock", lambda p, lock: _without(lock, "pydantic")),
    ("the build backend dropped from the lock", lambda p, lock: _without(lock, "setuptools")),
    ("a range the pin leaves",
     lambda p, lock: (p["project"]["dependencies"].__setitem__(0, "cryptography>=99"), lock)[1]),
    ("an entry without hashes",
     lambda p, lock: _unhashed(lock, "rfc8785")),
    ("a dependency locked for linux only",
     lambda p, lock: re.sub(r"(?m)^(sigstore==\S+) \\$", r"\1 ; sys_platform == 'linux' \\", lock)),
])
def test_a_lock_that_no_longer_covers_pyproject_fails(pyproject: dict[str, object], name: str, change) -> None:  # type: ignore[no-untyped-def]
    import copy

    changed = copy.deepcopy(pyproject)
    lock = change(changed, LOCK.read_text("utf-8"))
    assert lock_problems(changed, lock) != [], name
