"""Opening a qualification bundle: everything checked in memory, then written into a fresh private folder.

The archive is read whole (it is capped) and parsed from memory, so nothing
can change between the checks and the use. Refused, each with a stable code
and nothing extracted: an archive over the size cap, not a zip, encrypted or
oddly compressed members, more members than the cap, a member or the total
over its cap, absolute or climbing names, links, devices and folders,
duplicate names or names that alias under case folding, a manifest that is
missing or malformed, and any member the manifest does not account for by
exact name, size and SHA-256.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from desktop_qualify.evidence_schemas import (
    STATEMENT_SUFFIXES,
    BundleManifest,
    Code,
    JsonBounds,
    QualificationError,
    is_evidence_file_name,
    load_json,
    read_bounded,
    validate_model,
)
from desktop_qualify.qualify_files import NOFOLLOW, casefold_name

from . import _limits as limits
from ._names import check_member_name, refuse


@dataclass
class OpenedBundle:
    """A bundle checked and written out: a small checkout holding the policy, its trust root and the evidence."""

    source: Path
    sha256: str
    manifest: BundleManifest
    root: Path

    @property
    def policy_path(self) -> Path:
        """The bundle's policy, where it stands in the written-out checkout."""
        return self.root.joinpath(*self.manifest.policy.split("/"))

    @property
    def evidence_dir(self) -> Path:
        """The folder holding the bundle's statements."""
        return self.root / limits.EVIDENCE_FOLDER

    def close(self) -> None:
        """Remove the written-out checkout."""
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> OpenedBundle:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _invalid(source: Path, why: str) -> QualificationError:
    return QualificationError(Code.BUNDLE_INVALID, f"bundle {source}: {why}")


def _check_entries(source: Path, infos: list[zipfile.ZipInfo]) -> None:
    if len(infos) > limits.MAX_MEMBERS:
        raise _invalid(source, f"{len(infos)} members; a bundle holds at most {limits.MAX_MEMBERS}")
    seen: dict[str, str] = {}
    total = 0
    for info in infos:
        name = info.filename
        check_member_name(name)
        mode = info.external_attr >> 16
        if info.is_dir() or stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            raise refuse(name, "is not a regular file (a folder, a link or a device)")
        if info.flag_bits & 0x1:
            raise refuse(name, "is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise refuse(name, f"uses compression method {info.compress_type}, not stored or deflated")
        key = casefold_name(name)
        if key in seen:
            raise refuse(name, "is listed twice" if seen[key] == name else
                         f"aliases {seen[key][:120]!r} on a case-insensitive file system")
        seen[key] = name
        if info.file_size > limits.MAX_MEMBER_BYTES:
            raise refuse(name, f"unpacks to {info.file_size} bytes, over the {limits.MAX_MEMBER_BYTES} a member may")
        total += info.file_size
        if total > limits.MAX_TOTAL_BYTES:
            raise _invalid(source, f"members unpack to more than {limits.MAX_TOTAL_BYTES} bytes")
    # A member named like another's folder ("trust" beside "trust/keyring.json") cannot be unpacked: refused
    # here, as the bundle's fault, not met later as a folder that cannot be made.
    folders = {casefold_name("/".join(name.split("/")[:i])): name for name in seen.values()
               for i in range(1, name.count("/") + 1)}
    for key, name in seen.items():
        if key in folders:
            raise refuse(name, f"is a file where {folders[key][:120]!r} needs a folder")


def _read_members(source: Path, archive: zipfile.ZipFile) -> dict[str, bytes]:
    members: dict[str, bytes] = {}
    for info in archive.infolist():
        try:
            with archive.open(info) as handle:
                # One byte past the cap: a member whose header under-declares its size is caught here.
                data = handle.read(limits.MAX_MEMBER_BYTES + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
            raise refuse(info.filename, f"cannot be read ({exc})") from exc
        if len(data) != info.file_size:
            raise refuse(info.filename, "holds another size than its header declares")
        members[info.filename] = data
    return members


def _manifest(source: Path, members: dict[str, bytes]) -> BundleManifest:
    data = members.pop(limits.MANIFEST, None)
    if data is None:
        raise _invalid(source, f"no {limits.MANIFEST}")
    what = f"bundle {source}: {limits.MANIFEST}"
    try:
        return validate_model(BundleManifest, load_json(data, what=what, bounds=JsonBounds(len(data) + 1, 8)),
                              what=what)
    except QualificationError as exc:
        raise QualificationError(Code.BUNDLE_INVALID, exc.message) from exc


def _check_against_manifest(source: Path, manifest: BundleManifest, members: dict[str, bytes]) -> None:
    def mismatch(why: str) -> QualificationError:
        return QualificationError(Code.BUNDLE_MANIFEST_MISMATCH, f"bundle {source}: {why}")

    listed = {entry.path: entry for entry in manifest.files}
    if len(listed) != len(manifest.files):
        raise mismatch("the manifest lists a file twice")
    if extra := sorted(set(members) - set(listed)):
        raise mismatch(f"{extra[0]!r} is in the bundle but not in its manifest")
    if absent := sorted(set(listed) - set(members)):
        raise mismatch(f"{absent[0]!r} is in the manifest but not in the bundle")
    for name, entry in sorted(listed.items()):
        data = members[name]
        if len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
            raise mismatch(f"{name!r} is not the file the manifest names (size or SHA-256 differs)")
    if manifest.policy not in listed or listed[manifest.policy].sha256 != manifest.policy_sha256:
        raise mismatch("the manifest's policy is not a member with the policy digest it states")
    roles = [manifest.policy, *manifest.trust, *manifest.evidence]
    if sorted(roles) != sorted(listed):
        raise mismatch("the manifest's files are not exactly its policy, trust root and evidence")
    for name in manifest.evidence:
        folder, _, file_name = name.partition("/")
        if folder != limits.EVIDENCE_FOLDER or "/" in file_name or not any(
                is_evidence_file_name(file_name, suffix) for suffix in STATEMENT_SUFFIXES.values()):
            raise mismatch(f"{name!r} is listed as evidence but is not a statement in {limits.EVIDENCE_FOLDER}/")
    if any(name.startswith(f"{limits.EVIDENCE_FOLDER}/") for name in [manifest.policy, *manifest.trust]):
        raise mismatch(f"only statements stand in {limits.EVIDENCE_FOLDER}/")


def _extract(members: dict[str, bytes], workspace: Path) -> Path:
    workspace.mkdir(parents=True, exist_ok=True)
    # mkdtemp: a fresh folder only this user can enter; names were checked, so each path stays inside it.
    root = Path(tempfile.mkdtemp(prefix="bundle-", dir=workspace))
    try:
        for name, data in sorted(members.items()):
            target = root.joinpath(*name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise QualificationError(Code.ENVIRONMENT, f"cannot write the opened bundle into {workspace}: "
                                                   f"{exc.strerror or exc}") from exc
    return root


def open_bundle(source: Path, workspace: Path) -> OpenedBundle:
    """Check ``source`` whole, then write it into a fresh private folder under ``workspace``."""
    if not source.exists():
        raise QualificationError(Code.USAGE, f"{source}: missing (no such bundle)")
    data = read_bounded(source, max_bytes=limits.MAX_ARCHIVE_BYTES, what=f"bundle {source}")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            _check_entries(source, infos)
            members = _read_members(source, archive)
    except zipfile.BadZipFile as exc:
        raise _invalid(source, f"not a zip archive ({exc})") from exc
    manifest = _manifest(source, members)
    _check_against_manifest(source, manifest, members)
    return OpenedBundle(source, hashlib.sha256(data).hexdigest(), manifest, _extract(members, workspace))
