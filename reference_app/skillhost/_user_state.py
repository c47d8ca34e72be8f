"""The app contract's state verbs (docs/app-contract.md, "State verbs"): write a known user state, check it.

The skill host's user state is what a user would lose on a bad upgrade: the
trust store they accepted a publisher into, an external skill they installed
(signed, with its lock), and their list of installed skills. It lives in the
user's home (``~/.skillhost-user``), never in the installed package, so an
upgrade replaces the app and keeps it.

``state check`` re-verifies every installed skill as execution would
(signature, lock, re-read digests) and reports one digest of the whole state.
Like Firefox's profile downgrade protection, the state remembers the newest
version that opened it (``profile.json``, outside the digest); an older
version refuses it with ``CC_SKILL_STATE_NEWER`` instead of reading data a
newer version may have changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TypedDict

from skillhost._errors import SkillError
from skillhost._runtime import build_info, platform_name
from skillhost._version import __version__
from skillhost.packaging import TrustStore, discover, new_key, sign_package, verify_for_execution

STATE_FOLDER = ".skillhost-user"
PROFILE = "profile.json"
USER_SKILL = "user-greeter"
_MAX_FILES = 64
_MAX_FILE_BYTES = 256 * 1024
_VERSION = re.compile(r"^(\d{1,6})\.(\d{1,6})\.(\d{1,6})$")

_SKILL_MD = f"""---
id: {USER_SKILL}
name: User greeter
execution-capabilities:
  - host:logger
---

An external skill a user installed: part of the state an upgrade must keep.
"""
_HANDLER = """
def run(ports, args):
    ports.logger.info("user greeter ran")
    return {"greeting": "hello " + str(args.get("who", "user"))[:40]}
"""


class StateReport(TypedDict):
    kind: str
    version: int
    verb: str
    app_version: str
    build_sha: str
    platform: str
    observed: str
    code: str | None
    state_sha256: str | None
    detail: str


def state_root() -> Path:
    return Path.home() / STATE_FOLDER


def _version_key(version: str) -> tuple[int, ...] | None:
    match = _VERSION.match(version)
    return tuple(int(part) for part in match.groups()) if match else None


def _state_digest(root: Path) -> str:
    """One digest of every state file (names and bytes), the profile marker excepted."""
    entries: list[list[str]] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise SkillError("CC_SKILL_STATE_INVALID", "the user state holds a link")
        if not path.is_file() or path.relative_to(root).as_posix() == PROFILE:
            continue
        if len(entries) >= _MAX_FILES or path.stat().st_size > _MAX_FILE_BYTES:
            raise SkillError("CC_SKILL_STATE_INVALID", "the user state is larger than the app ever writes")
        entries.append([path.relative_to(root).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest()])
    return hashlib.sha256(json.dumps(entries, separators=(",", ":")).encode()).hexdigest()


def _report(verb: str, observed: str, code: str | None, digest: str | None, detail: str) -> StateReport:
    return {"kind": "qualify-state", "version": 1, "verb": verb, "app_version": __version__,
            "build_sha": build_info()["build_sha"], "platform": platform_name(), "observed": observed,
            "code": code, "state_sha256": digest, "detail": detail[:400]}


def _write_profile(root: Path) -> None:
    (root / PROFILE).write_text(json.dumps({"format": 1, "newest_opened_by": __version__}) + "\n", encoding="utf-8")


def write_state() -> StateReport:
    """A fresh known state: a trusted publisher key, one signed external skill, the list naming it."""
    root = state_root()
    if root.exists():
        raise SkillError("CC_SKILL_STATE_EXISTS", "the user state already exists; write is for a fresh home")
    skill = root / "skills" / USER_SKILL
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(_SKILL_MD, encoding="utf-8", newline="\n")
    (skill / "handler.py").write_text(_HANDLER, encoding="utf-8", newline="\n")
    key = new_key()
    signed = sign_package(skill, key)
    (root / "trust-store.json").write_bytes(TrustStore.from_public_keys([key.public_key()]).dump())
    (root / "installed.json").write_text(json.dumps({"skills": [signed["skill_id"]]}) + "\n", encoding="utf-8")
    _write_profile(root)
    detail = f"installed {signed['skill_id']} by {signed['keyid'][:16]}"
    return _report("write", "allow", None, _state_digest(root), detail)


def _installed(root: Path) -> list[str]:
    try:
        doc = json.loads((root / "installed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SkillError("CC_SKILL_STATE_INVALID", "the list of installed skills is missing or unreadable") from None
    skills = doc.get("skills") if isinstance(doc, dict) else None
    if not isinstance(skills, list) or not all(isinstance(s, str) and s.isascii() for s in skills):
        raise SkillError("CC_SKILL_STATE_INVALID", "the list of installed skills is malformed")
    return skills


def _refuse_newer(root: Path) -> None:
    try:
        newest = json.loads((root / PROFILE).read_text(encoding="utf-8")).get("newest_opened_by")
    except (OSError, ValueError, AttributeError):
        raise SkillError("CC_SKILL_STATE_INVALID", "the profile marker is missing or unreadable") from None
    mine, theirs = _version_key(__version__), _version_key(str(newest))
    # An unreadable version cannot be shown to be older: refuse, as for a newer one.
    if mine is None or theirs is None or theirs > mine:
        raise SkillError("CC_SKILL_STATE_NEWER", f"the user state was opened by version {str(newest)[:40]}, "
                                                 f"newer than this {__version__}")


def _verified(root: Path) -> tuple[str, int]:
    """The state's digest and its number of skills, each re-verified as execution would; raises SkillError."""
    if not root.is_dir():
        raise SkillError("CC_SKILL_STATE_MISSING", "no user state in this home")
    _refuse_newer(root)
    trust = TrustStore.load(root / "trust-store.json")
    skills = _installed(root)
    if not skills:
        raise SkillError("CC_SKILL_STATE_INVALID", "the user state lists no installed skill")
    for skill_id in skills:
        folder = root / "skills" / skill_id
        if not folder.is_dir() or folder.name != skill_id:
            raise SkillError("CC_SKILL_STATE_MISSING", f"installed skill {skill_id[:64]} is gone")
        verify_for_execution(discover(folder), trust)
    return _state_digest(root), len(skills)


def check_state() -> StateReport:
    """The state as this version finds it: every installed skill re-verified, one digest; never repaired."""
    root = state_root()
    try:
        digest, count = _verified(root)
    except SkillError as exc:
        return _report("check", "reject", exc.code, None, exc.message)
    _write_profile(root)
    return _report("check", "allow", None, digest, f"{count} installed skill(s) verify")
