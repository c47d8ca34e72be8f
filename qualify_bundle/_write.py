"""Packing one run into a qualification bundle: its statements, the policy it was judged by, and its trust root.

Members stand where they stand in the repository (``policies/<name>.toml``, the
trust files at the paths the policy names from ``policies/``), so the bundle,
once opened, is a small checkout in which the policy's own relative paths find
its own trust material. In local mode the trust root is the keyring's public
keys; no private key is ever read here.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import stat
import zipfile
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    STATEMENT_SUFFIXES,
    BundleFile,
    BundleManifest,
    Code,
    QualificationError,
    TrustMode,
    canonical_bytes,
    is_evidence_file_name,
    read_bounded,
    utc_now,
)
from desktop_qualify.qualify_files import write_output
from desktop_qualify.qualify_policy import Policy

from . import _limits as limits
from ._names import check_member_name


def _member_for(relative: str) -> str:
    """A policy path (written from ``policies/``) as a bundle member; one that leaves the repository is refused."""
    member = posixpath.normpath(posixpath.join(limits.POLICY_FOLDER, relative))
    if member.startswith("../") or member == ".." or posixpath.isabs(member):
        raise QualificationError(Code.POLICY_INVALID, f"the policy's path {relative!r} leaves the repository; "
                                                      "a bundle carries only what is inside it")
    check_member_name(member)
    return member


def _trust_members(policy: Policy) -> dict[str, bytes]:
    sigstore = policy.sigstore
    if sigstore is not None:
        path = policy.resolve_pinned(sigstore.trusted_root)
        data = read_bounded(path, max_bytes=limits.MAX_MEMBER_BYTES, what=f"trusted root {path}")
        if hashlib.sha256(data).hexdigest() != sigstore.trusted_root_sha256:
            raise QualificationError(Code.POLICY_INVALID, f"trusted root {path} does not have the bytes the policy "
                                                          "pins (trusted_root_sha256)")
        return {_member_for(sigstore.trusted_root): data}
    keyring = policy.ed25519.keyring
    path = policy.resolve(keyring)
    return {_member_for(keyring): read_bounded(path, max_bytes=limits.MAX_MEMBER_BYTES, what=f"keyring {path}")}


def _evidence_members(evidence_dir: Path, suffix: str) -> dict[str, bytes]:
    if not evidence_dir.is_dir():
        raise QualificationError(Code.USAGE, f"--evidence {evidence_dir}: missing (no such folder)")
    members: dict[str, bytes] = {}
    for entry in sorted(evidence_dir.iterdir()):
        if entry.is_symlink() or not entry.is_file() or not is_evidence_file_name(entry.name, suffix):
            raise QualificationError(Code.EVIDENCE_UNEXPECTED, f"{entry}: not a statement of this policy's trust "
                                                               "mode; a bundle holds the statements only")
        members[f"{limits.EVIDENCE_FOLDER}/{entry.name}"] = read_bounded(entry, max_bytes=limits.MAX_MEMBER_BYTES)
    if not members:
        raise QualificationError(Code.EVIDENCE_MISSING, f"{evidence_dir}: no statements to bundle")
    return members


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=limits.ZIP_DATE)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def write_bundle(policy: Policy, evidence_dir: Path, out: Path) -> BundleManifest:
    """Write the bundle of the run in ``evidence_dir`` to ``out`` (atomically); returns its manifest."""
    if not out.name.endswith(limits.BUNDLE_SUFFIX):
        raise QualificationError(Code.USAGE, f"--out {out}: a bundle's name ends in {limits.BUNDLE_SUFFIX}, "
                                             "which is how `qualify audit` tells it from a folder")
    # The policy's bytes are read again here: what is packed is what the digest names.
    policy_bytes = read_bounded(policy.path, max_bytes=limits.MAX_MEMBER_BYTES, what=f"policy {policy.path}")
    if hashlib.sha256(policy_bytes).hexdigest() != policy.sha256:
        raise QualificationError(Code.POLICY_INVALID, f"policy {policy.path} changed while it was being bundled")
    policy_member = _member_for(policy.path.name)
    trust = _trust_members(policy)
    mode: TrustMode = "sigstore" if policy.sigstore is not None else "ed25519"
    evidence = _evidence_members(evidence_dir, STATEMENT_SUFFIXES[mode])
    files = {policy_member: policy_bytes, **trust, **evidence}
    manifest = BundleManifest(
        created_at=utc_now(), trust_mode=mode,
        policy=policy_member, policy_sha256=policy.sha256, trust=sorted(trust), evidence=sorted(evidence),
        files=[BundleFile(path=name, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
               for name, data in sorted(files.items())])
    data = _zip({limits.MANIFEST: canonical_bytes(manifest), **dict(sorted(files.items()))})
    if len(data) > limits.MAX_ARCHIVE_BYTES:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"the bundle would be {len(data)} bytes, over the "
                                                          f"{limits.MAX_ARCHIVE_BYTES} a reader accepts")
    # The one output rule: never through (or over) a link, a FIFO or a device; - is standard output.
    write_output(out, data, option="--out")
    return manifest
