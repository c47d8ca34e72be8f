"""Reading an evidence folder: which files are statements, bounded reads, nothing else.

An evidence folder holds exactly the signed statements: ``platform-<p><suffix>``
for each platform job and ``aggregate<suffix>``, where the suffix is the trust
mode's (``.dsse.json`` local, ``.sigstore.json`` GitHub). Any other file is refused, so
that nothing unsigned can sit beside the evidence and be mistaken for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError, aggregate_file_name, read_bounded

from ._findings import Findings

_PLATFORM_FILE = re.compile(r"^platform-([a-z0-9]{1,16})(\.[a-z0-9.]{1,24})$")


@dataclass
class EvidenceFiles:
    platform: dict[str, bytes] = field(default_factory=dict)  # file name -> bytes
    aggregate: bytes | None = None


def read_evidence_dir(directory: Path, *, suffix: str, max_bytes: int, findings: Findings) -> EvidenceFiles:
    if not directory.is_dir():
        raise QualificationError(Code.USAGE, f"{directory}: not a folder")
    files = EvidenceFiles()
    entries = sorted(directory.iterdir())
    if len(entries) > 64:
        findings.add(Code.EVIDENCE_UNEXPECTED, f"{directory}: {len(entries)} entries; at most 64 are read")
        entries = entries[:64]
    for entry in entries:
        name = entry.name
        if entry.is_symlink() or not entry.is_file():
            findings.add(Code.EVIDENCE_UNEXPECTED, f"{name}: not a regular file")
            continue
        match = _PLATFORM_FILE.match(name)
        if name != aggregate_file_name(suffix) and (match is None or match.group(2) != suffix):
            findings.add(Code.EVIDENCE_UNEXPECTED, f"{name}: not an evidence file name")
            continue
        try:
            data = read_bounded(entry, max_bytes=max_bytes, what=name)
        except QualificationError as exc:
            findings.add_error(exc)
            continue
        if name == aggregate_file_name(suffix):
            files.aggregate = data
        else:
            files.platform[name] = data
    if not files.platform and files.aggregate is None and findings.ok:
        findings.add(Code.EVIDENCE_MISSING, f"{directory}: no evidence files")
    return files
