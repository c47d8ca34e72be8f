"""The hostile corpus's rows for `qualify verify-vsa --level` (issue 32, item 13): a summary below the level asked for.

Every row starts from the gate's own signed summary of a real, QUALIFIED local run (the baseline row proves
`verify-vsa --level DESKTOP_QUALIFIED_LOCAL_CHECK` accepts it) and hands verify-vsa a summary, signed by the
policy's own verifier key, that is right in every way but its level: an audit's summary where the gate's level
is asked for, a local check's where the release gate's is, a level the project never issues, no level at all.
Each is refused with QE_VSA_LEVEL (exit 1): a level below the one asked for by verify-vsa's step 5, a level the
project never issues already as the summary is read (``parse_vsa_statement``). Asking for a level the project
never issues is unusable input (QE_USAGE, exit 2). No row stops at the signature, the subject, the policy or
the result: only the level can.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import VSA_LEVELS, Code, canonical_bytes
from desktop_qualify.qualify_trust import load_private_key
from desktop_qualify.qualify_trust._envelope import sign_envelope
from support.evidence_factory import Evidence, make_evidence
from support.release_summaries import gate_summaries

AUDIT, LOCAL, GATE = VSA_LEVELS["audit"], VSA_LEVELS["local-check"], VSA_LEVELS["release-gate"]
NEVER_ISSUED = "SLSA_BUILD_LEVEL_3"


@dataclass
class Site:
    tmp: Path
    ev: Evidence
    summary: bytes  # the gate's one summary line of the run's artifact, as `qualify verify --vsa` signed it

    def resigned(self, **predicate: Any) -> Path:
        """The gate's summary with ``predicate`` fields changed, signed again by the policy's verifier key."""
        statement = json.loads(base64.b64decode(json.loads(self.summary)["payload"]))
        statement["predicate"].update(predicate)
        key = load_private_key(self.ev.keys.keyring.parent / "keys" / "verifier.ed25519.pem")
        out = self.tmp / "resigned.intoto.jsonl"
        out.write_bytes(sign_envelope(canonical_bytes(statement), key) + b"\n")
        return out

    def gate(self) -> Path:
        out = self.tmp / "gate.intoto.jsonl"
        out.write_bytes(self.summary + b"\n")
        return out

    def audit(self, qualify: Any) -> Path:
        """What `qualify audit --vsa` writes for the same run: the audit's level, not the gate's."""
        out = self.tmp / "audit.intoto.jsonl"
        done = qualify(["audit", "--policy", str(self.ev.policy_path), "--evidence", str(self.ev.evidence_dir),
                        "--vsa", str(out)])
        assert done.status == 0, done.text
        return out


# (the summaries file, the --level asked for)
Make = Callable[[Site, Any], tuple[Path, str]]


@dataclass(frozen=True)
class VsaRow:
    id: str
    make: Make
    code: Code | None  # None: the untouched baseline, which must be accepted
    status: int
    says: str = ""  # what the refusal names, so the row is refused by its own check


VSA_LEVEL_CORPUS = [
    VsaRow("vsa-gate-summary-at-its-own-level", lambda s, q: (s.gate(), LOCAL), None, 0),
    # -- a summary below the level asked for
    VsaRow("vsa-audit-summary-where-the-gate-level-is-required", lambda s, q: (s.audit(q), LOCAL),
           Code.VSA_LEVEL, 1, f"asserts {AUDIT}, not {LOCAL}"),
    VsaRow("vsa-local-check-summary-where-the-release-gate-is-required", lambda s, q: (s.gate(), GATE),
           Code.VSA_LEVEL, 1, f"asserts {LOCAL}, not {GATE}"),
    VsaRow("vsa-audit-level-re-signed-where-the-gate-level-is-required",
           lambda s, q: (s.resigned(verifiedLevels=[AUDIT]), LOCAL), Code.VSA_LEVEL, 1, f"asserts {AUDIT}, not"),
    VsaRow("vsa-passed-with-no-level", lambda s, q: (s.resigned(verifiedLevels=[]), LOCAL), Code.VSA_LEVEL, 1,
           f"asserts none, not {LOCAL}"),
    # -- a level the project never issues
    VsaRow("vsa-summary-asserts-a-level-the-project-never-issues",
           lambda s, q: (s.resigned(verifiedLevels=[NEVER_ISSUED]), LOCAL), Code.VSA_LEVEL, 1,
           f"names {NEVER_ISSUED!r}, a level this project never writes"),
    VsaRow("vsa-never-issued-level-beside-the-audits",
           lambda s, q: (s.resigned(verifiedLevels=[NEVER_ISSUED, AUDIT]), GATE), Code.VSA_LEVEL, 1,
           f"names {NEVER_ISSUED!r}, a level this project never writes"),
    VsaRow("vsa-level-asked-for-the-project-never-issues", lambda s, q: (s.gate(), NEVER_ISSUED), Code.USAGE, 2,
           "is not a level this project writes"),
]


@pytest.fixture
def site(tmp_path: Path, qualify: Any) -> Site:
    ev = make_evidence(tmp_path / "run")
    lines = gate_summaries(qualify, ev, tmp_path / "summaries.intoto.jsonl").splitlines()
    assert len(lines) == 1
    return Site(tmp_path, ev, lines[0])


def test_row_ids_are_unique() -> None:
    ids = [row.id for row in VSA_LEVEL_CORPUS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("row", VSA_LEVEL_CORPUS, ids=lambda row: row.id)
def test_verify_vsa_level(row: VsaRow, site: Site, qualify: Any) -> None:
    vsa, level = row.make(site, qualify)
    done = qualify(["verify-vsa", "--policy", str(site.ev.policy_path), "--artifact", str(site.ev.artifact_paths[0]),
                    "--level", level, str(vsa)])
    assert "Traceback" not in done.text
    assert "QE_INTERNAL" not in done.text
    assert done.status == row.status, done.text
    if row.code is None:
        assert f"VSA ACCEPTED: {site.ev.artifact_paths[0].name} passed at {level}" in done.out, done.text
        return
    assert "VSA ACCEPTED" not in done.out
    assert row.code.value in done.err, done.text
    assert row.says in done.err, done.text
