"""Reading an evidence folder: which files are statements, bounded reads, nothing else.

An evidence folder holds exactly the signed statements: ``platform-<p><suffix>``
and its SLSA provenance ``provenance-<p><suffix>`` for each platform job, and
``aggregate<suffix>``, where the suffix is the trust mode's (``.dsse.json``
local, ``.sigstore.json`` GitHub). Any other file is refused, so that nothing
unsigned can sit beside the evidence and be mistaken for it.

Evidence of the other trust mode is named first, as one root cause: a folder of
local statements under a GitHub-mode policy is not a folder of stray files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    STATEMENT_SUFFIXES,
    Code,
    QualificationError,
    Reason,
    aggregate_file_name,
    is_evidence_file_name,
    provenance_platform,
    read_bounded,
)

from ._findings import Findings

_PLATFORM_FILE = re.compile(r"^platform-([a-z0-9]{1,16})(\.[a-z0-9.]{1,24})$")
# Each trust mode's evidence file suffix, and the mode's name as people say it.
MODE_SUFFIXES = {STATEMENT_SUFFIXES["ed25519"]: "local (Ed25519)", STATEMENT_SUFFIXES["sigstore"]: "GitHub (Sigstore)"}


@dataclass
class EvidenceFiles:
    """The statements of one run, by file name, as read from a folder or fetched from GitHub."""

    platform: dict[str, bytes] = field(default_factory=dict)  # file name -> bytes
    aggregate: bytes | None = None
    provenance: dict[str, bytes] = field(default_factory=dict)  # file name -> bytes
    # The one root cause that explains every statement absent here: a folder of only the other trust mode's
    # statements, or an attestation store that holds no qualification for the candidate files.
    absence_cause: Reason | None = None


def platform_of(file_name: str) -> str | None:
    """The platform a statement's file name claims (``platform-linux.dsse.json`` -> ``linux``)."""
    match = _PLATFORM_FILE.match(file_name)
    return match.group(1) if match else None


def _statement_suffix(name: str) -> str | None:
    """The trust-mode suffix of a statement file name of either mode, else None."""
    return next((suffix for suffix in MODE_SUFFIXES if is_evidence_file_name(name, suffix)), None)


def check_evidence_mode(directory: Path, names: list[str], suffix: str, findings: Findings) -> Reason | None:
    """A folder whose statements are all of the other trust mode: one root cause, named before anything else."""
    suffixes = {s for s in map(_statement_suffix, names) if s is not None}
    foreign = suffixes - {suffix}
    if not foreign or suffix in suffixes:
        return None
    other = sorted(foreign)[0]
    return findings.add(Code.MODE_MISMATCH,
                        f"{directory}: {MODE_SUFFIXES[other]}-mode evidence (*{other}) checked under a "
                        f"{MODE_SUFFIXES.get(suffix, suffix)}-mode policy (*{suffix}); check it with a policy "
                        "of its own trust mode")


def _keep(files: EvidenceFiles, name: str, data: bytes, suffix: str) -> None:
    """File one statement's bytes under what its name says it is."""
    if name == aggregate_file_name(suffix):
        files.aggregate = data
    elif provenance_platform(name) is not None:
        files.provenance[name] = data
    else:
        files.platform[name] = data


def read_evidence_dir(directory: Path, *, suffix: str, max_bytes: int, findings: Findings) -> EvidenceFiles:
    if not directory.exists():
        raise QualificationError(Code.USAGE, f"--evidence {directory}: missing (no such folder)")
    if not directory.is_dir():
        raise QualificationError(Code.USAGE, f"--evidence {directory}: not a folder")
    files = EvidenceFiles()
    entries = sorted(directory.iterdir())
    files.absence_cause = check_evidence_mode(directory, [e.name for e in entries[:64]], suffix, findings)
    if len(entries) > 64:
        findings.add(Code.EVIDENCE_UNEXPECTED, f"{directory}: {len(entries)} entries; at most 64 are read")
        entries = entries[:64]
    for entry in entries:
        name = entry.name
        if entry.is_symlink() or not entry.is_file():
            findings.add(Code.EVIDENCE_UNEXPECTED, f"{name}: not a regular file")
            continue
        if not is_evidence_file_name(name, suffix):
            other = _statement_suffix(name)
            if files.absence_cause is None:
                findings.add(Code.EVIDENCE_UNEXPECTED, f"{name}: not an evidence file name" if other is None else
                             f"{name}: a {MODE_SUFFIXES[other]}-mode statement among "
                             f"{MODE_SUFFIXES.get(suffix, suffix)}-mode evidence")
            elif other is None:
                findings.add(Code.EVIDENCE_UNEXPECTED, f"{name}: not an evidence file name")
            continue
        try:
            data = read_bounded(entry, max_bytes=max_bytes, what=name)
        except QualificationError as exc:
            findings.add_error(exc)
            continue
        _keep(files, name, data, suffix)
    if not files.platform and files.aggregate is None and findings.ok:
        findings.add(Code.EVIDENCE_MISSING, f"{directory}: no evidence files")
    return files


def bounded(files: EvidenceFiles, max_bytes: int, findings: Findings) -> EvidenceFiles:
    """Statements already in memory, held to the policy's size bound as a folder's files are."""
    def fits(name: str, data: bytes) -> bool:
        if len(data) <= max_bytes:
            return True
        findings.add(Code.EVIDENCE_TOO_LARGE, f"{name}: {len(data)} bytes, more than the policy's "
                                              f"max_statement_bytes ({max_bytes})")
        return False

    aggregate = files.aggregate
    return EvidenceFiles(platform={n: d for n, d in files.platform.items() if fits(n, d)},
                         aggregate=aggregate if aggregate is None or fits("aggregate", aggregate) else None,
                         provenance={n: d for n, d in files.provenance.items() if fits(n, d)},
                         absence_cause=files.absence_cause)
