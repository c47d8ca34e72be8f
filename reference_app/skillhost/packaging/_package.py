"""External skill packages: validation, lock building, and the re-verify-before-execution step."""
# Low-level os calls on purpose (lstat/O_NOFOLLOW/fstat identity checks).
# ruff: noqa: PTH112, PTH114, PTH118, PTH120

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, TypeGuard

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost._canon import canonical_bytes, sha256_hex
from skillhost._errors import SkillError
from skillhost.packaging._boundary_trap import register as register_external
from skillhost.packaging._manifest import parse_manifest
from skillhost.packaging._signing import LOCK_NAME, SIG_NAME, Lock, LockEntry, TrustStore, sign_lock, verify_signature
from skillhost.packaging._source_audit import audit_external_source

MAX_FILES = 16
MAX_FILE_BYTES = 32 * 1024
MAX_TOTAL_BYTES = 128 * 1024
ALLOWED_SUFFIXES = (".md", ".txt", ".json")
HANDLER_NAME = "handler.py"
# Native binaries (ELF, PE, Mach-O thin/fat), WebAssembly and zip containers (zipapps, jars, wheels).
_NATIVE_MAGIC = (
    b"\x7fELF",
    b"MZ",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"\x00asm",
    b"PK\x03\x04",
)
_SHEBANG = b"#!"
_TRAVERSAL = re.compile(r"(^|[\\/])\.\.([\\/]|$)|^[\\/]|^[A-Za-z]:")

# (st_dev, st_ino, st_size, st_mtime_ns) of a file as it was read.
FileIdentity = tuple[int, int, int, int]


@dataclass
class Candidate:
    """What discovery learned. Never used as authority for execution."""

    root: str
    skill_id: str
    lock_sha256: str
    identities: dict[str, FileIdentity] = field(default_factory=dict)


class SignResult(TypedDict):
    skill_id: str
    keyid: str
    files: int


@dataclass
class VerifiedSkill:
    skill_id: str
    capabilities: list[str]
    handler_source: str
    handler_sha256: str
    signer: str


def _read_stable(root_real: str, name: str) -> tuple[bytes, FileIdentity]:
    path = os.path.join(root_real, name)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", f"symlink in package: {name[:60]}")
    if not stat.S_ISREG(st.st_mode):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", f"{name} is not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise SkillError("CC_SKILL_PACKAGE_INVALID", f"oversize file: {name[:60]} exceeds {MAX_FILE_BYTES} bytes")
    if os.path.dirname(os.path.realpath(path)) != root_real:
        raise SkillError("CC_SKILL_PATH_ESCAPE", f"{name} resolves outside the skill root")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        before = os.fstat(fd)
        if (before.st_dev, before.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(before.st_mode):
            raise SkillError("CC_SKILL_FILE_UNSTABLE", f"{name} changed identity while opening")
        chunks: list[bytes] = []
        total = 0
        while True:
            block = os.read(fd, 65536)
            if not block:
                break
            total += len(block)
            if total > MAX_FILE_BYTES:
                raise SkillError("CC_SKILL_PACKAGE_INVALID", f"oversize file: {name[:60]} grew past the cap")
            chunks.append(block)
        after = os.fstat(fd)
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or after.st_size != total:
            raise SkillError("CC_SKILL_FILE_UNSTABLE", f"{name} changed while being read")
    finally:
        os.close(fd)
    if os.name == "posix" and st.st_mode & 0o111:
        raise SkillError("CC_SKILL_PACKAGE_INVALID", f"executable payload: {name[:60]} has an exec mode bit")
    data = b"".join(chunks)
    return data, (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns)


def read_package(
    root: str | os.PathLike[str],
) -> tuple[str, dict[str, bytes], dict[str, FileIdentity]]:
    """Stable re-read of every file in a flat package. Returns (root_real, {name: bytes}, identities)."""
    root_path = os.fspath(root)
    if os.path.islink(root_path):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "symlink: the skill root is a symlink")
    root_real = os.path.realpath(root_path)
    if not os.path.isdir(root_real):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "skill root is not a directory")
    with os.scandir(root_real) as it:
        names = sorted(e.name for e in it)
    if len(names) > MAX_FILES:
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "too many files")
    files: dict[str, bytes] = {}
    ids: dict[str, FileIdentity] = {}
    total = 0
    for name in names:
        if name in (LOCK_NAME, SIG_NAME, HANDLER_NAME, "SKILL.md"):
            pass
        elif name.startswith(".") or not name.endswith(ALLOWED_SUFFIXES):
            raise SkillError("CC_SKILL_PACKAGE_INVALID", f"file type not allowed: {name[:60]!r}")
        data, ident = _read_stable(root_real, name)
        if data.startswith(_NATIVE_MAGIC):
            raise SkillError("CC_SKILL_PACKAGE_INVALID", f"native binary: {name[:60]}")
        # The handler is source handed to the worker, never executed by the OS; any other script is a payload.
        if data.startswith(_SHEBANG) and name != HANDLER_NAME:
            raise SkillError("CC_SKILL_PACKAGE_INVALID", f"executable payload: {name[:60]} has a shebang")
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise SkillError("CC_SKILL_PACKAGE_INVALID", "oversize package: exceeds the total size cap")
        files[name], ids[name] = data, ident
    # From now on, this process compiling, running or importing this package's code is caught (``_boundary_trap``).
    register_external(root_path, files.get(HANDLER_NAME))
    return root_real, files, ids


def build_lock(skill_id: str, files: Mapping[str, bytes]) -> Lock:
    entries: list[LockEntry] = [
        {"path": n, "sha256": sha256_hex(b), "size": len(b)}
        for n, b in sorted(files.items())
        if n not in (LOCK_NAME, SIG_NAME)
    ]
    return {"version": 1, "skill_id": skill_id, "files": entries}


def _parse_json(data: bytes, code: str, what: str) -> object:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise SkillError(code, f"{what} is not valid JSON") from None


def _is_lock(lock: object) -> TypeGuard[Lock]:
    """Shape check of an untrusted lock; a traversal in a well-typed path list raises PACKAGE_INVALID."""
    if not (
        isinstance(lock, dict)
        and lock.get("version") == 1
        and isinstance(lock.get("skill_id"), str)
        and isinstance(lock.get("files"), list)
        and len(lock["files"]) <= MAX_FILES
    ):
        return False
    ok = all(
        isinstance(e, dict)
        and isinstance(e.get("path"), str)
        and isinstance(e.get("sha256"), str)
        and isinstance(e.get("size"), int)
        for e in lock["files"]
    )
    paths: list[str] = [e["path"] for e in lock["files"]] if ok else []
    if any(_TRAVERSAL.search(p) or "/" in p or "\\" in p for p in paths):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "path traversal: lock names a path outside the package")
    return ok and paths == sorted(set(paths))


def _check_lock_shape(lock: object) -> Lock:
    if not _is_lock(lock):
        raise SkillError("CC_SKILL_LOCK_INVALID", "lock file has the wrong shape")
    return lock


def discover(root: str | os.PathLike[str]) -> Candidate:
    _, files, ids = read_package(root)
    manifest = parse_manifest(files.get("SKILL.md", b"").decode("utf-8", "replace")) if "SKILL.md" in files else None
    if manifest is None:
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "no SKILL.md")
    lock_sha = ""
    if LOCK_NAME in files:
        # Structure is validated at discovery already: a traversal in the lock is refused before any signature work.
        _check_lock_shape(_parse_json(files[LOCK_NAME], "CC_SKILL_LOCK_INVALID", "lock"))
        lock_sha = sha256_hex(files[LOCK_NAME])
    return Candidate(root=os.fspath(root), skill_id=manifest["id"], lock_sha256=lock_sha, identities=ids)


def verify_for_execution(candidate: Candidate, trust: TrustStore) -> VerifiedSkill:
    """Re-read and re-verify everything right before execution; fail closed."""
    root_real, files, ids = read_package(candidate.root)
    if LOCK_NAME not in files:
        raise SkillError("CC_SKILL_LOCK_MISSING", "no .skill-lock.json")
    if SIG_NAME not in files:
        raise SkillError("CC_SKILL_SIGNATURE_MISSING", "no .skill-signature.json")
    lock = _check_lock_shape(_parse_json(files[LOCK_NAME], "CC_SKILL_LOCK_INVALID", "lock"))
    sig_doc = _parse_json(files[SIG_NAME], "CC_SKILL_SIGNATURE_INVALID", "signature")
    signer = verify_signature(lock, sig_doc, trust)
    expected = build_lock(lock["skill_id"], files)
    if canonical_bytes(expected) != canonical_bytes(lock):
        raise SkillError("CC_SKILL_DIGEST_DRIFT", "re-read bytes do not match the signed lock")
    if candidate.lock_sha256 and sha256_hex(files[LOCK_NAME]) != candidate.lock_sha256:
        raise SkillError("CC_SKILL_DIGEST_DRIFT", "lock changed since discovery")
    # Same bytes are not enough: each file must still be the file (device, inode) discovery read.
    swapped = sorted(n for n, ident in candidate.identities.items() if n in ids and ids[n][:2] != ident[:2])
    if swapped:
        raise SkillError("CC_SKILL_FILE_UNSTABLE", f"{swapped[0][:60]} is not the file discovery read")
    if "SKILL.md" not in files:
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "no SKILL.md")
    try:
        manifest = parse_manifest(files["SKILL.md"].decode("utf-8"))
    except UnicodeDecodeError:
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "SKILL.md is not UTF-8") from None
    if manifest["id"] != lock["skill_id"] or manifest["id"] != candidate.skill_id:
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "skill id differs between SKILL.md, lock and discovery")
    if Path(root_real).name != manifest["id"]:
        # A package is run under the name it is requested by; a folder "innocent" claiming id
        # "host-info" would otherwise inherit host-info's grants and audit identity.
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "skill id differs from the package folder name")
    if HANDLER_NAME not in files:
        raise SkillError("CC_SKILL_PROMPT_ONLY", "prompt-only skill: no code execution")
    try:
        source = files[HANDLER_NAME].decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "handler is not UTF-8") from None
    # Parsed, never executed, in the host: raw imports and introspection tricks are refused before a worker starts.
    audit_external_source(source)
    return VerifiedSkill(
        skill_id=manifest["id"],
        capabilities=manifest["capabilities"],
        handler_source=source,
        handler_sha256=sha256_hex(files[HANDLER_NAME]),
        signer=signer,
    )


def sign_package(root: str | os.PathLike[str], key: Ed25519PrivateKey) -> SignResult:
    _, files, _ = read_package(root)
    if "SKILL.md" not in files:
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "no SKILL.md")
    manifest = parse_manifest(files["SKILL.md"].decode("utf-8"))
    lock = build_lock(manifest["id"], files)
    sig = sign_lock(key, lock)
    Path(root, LOCK_NAME).write_bytes(json.dumps(lock, sort_keys=True, indent=2).encode("utf-8") + b"\n")
    Path(root, SIG_NAME).write_bytes(json.dumps(sig, sort_keys=True, indent=2).encode("utf-8") + b"\n")
    return {"skill_id": manifest["id"], "keyid": sig["keyid"], "files": len(lock["files"])}
