"""Verification Summary Attestations: the gate's signed verdict on each artifact it judged (``--vsa FILE``).

One SLSA VSA v1 statement per artifact: the subject is the artifact (the
digest of the bytes the gate hashed, or in an audit the digest the verified
statements name), the policy is named by URI and SHA-256, the inputs are the
statements that verified, by the SHA-256 of their signed bytes. The result is
the decision's, never re-judged here: writing a summary cannot change a verdict.

The file is an in-toto attestation bundle (JSON Lines): one signed summary a
line, a DSSE envelope signed by the keyring's ``verifier`` key in local mode
(the form ``slsa-verifier verify-vsa`` reads with a public key), a Sigstore
bundle signed keylessly by the release workflow in GitHub mode.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from desktop_qualify.evidence_schemas import (
    IN_TOTO_STATEMENT_TYPE,
    VSA_LEVELS,
    VSA_PREDICATE_TYPE,
    VSA_VERIFIER_ID,
    Code,
    ConsumerDecision,
    QualificationError,
    VsaStatement,
    canonical_bytes,
    validate_model,
)
from desktop_qualify.qualify_files import write_output
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_runtime import tool_version
from desktop_qualify.qualify_trust import StatementSigner, signer_for
from desktop_qualify.qualify_verify import Verdict

from ._anchor import git_blob

# A git tag name as a release names it: no spaces, no control characters, no '..' (git check-ref-format).
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]{0,199}$")


def check_release_tag(tag: str | None) -> None:
    """``--release-tag`` is a plain tag name: it goes into a URL."""
    if tag is None:
        return
    if _TAG.fullmatch(tag) is None or ".." in tag:
        raise QualificationError(Code.USAGE, f"--release-tag {tag[:80]!r} is not a release tag name")


def resource_uri(policy: Policy, name: str, release_tag: str | None) -> str:
    """The release asset's download URL in GitHub mode with a tag; otherwise the artifact's file name.

    A local policy's repository is a name with no releases: with a tag (the workflow dry run passes one) the
    asset is named by a URN that says so, never by a GitHub URL that does not exist.
    """
    if release_tag is None:
        return name
    repository = policy.file.producer.repository
    tag, asset = quote(release_tag, safe=""), quote(name, safe="")
    if policy.sigstore is None:
        return f"urn:desktop-qualify:{repository}:release:{tag}:{asset}"
    return f"https://github.com/{repository}/releases/download/{tag}/{asset}"


def policy_uri(policy: Policy, commit: str | None, *, committed_at: str | None = None) -> str:
    """The policy file in its repository at the run's commit, when the file committed there is these very bytes.

    A policy that differs from (or is absent at) that commit is named without one: the URI never claims a
    commit whose policy is not the one that judged. The digest beside it is what a reader checks.
    ``committed_at``: a commit whose policy the caller has already found to be these bytes (a bundle's anchor).
    """
    root = policy.repository_root()
    relative = (policy.path.relative_to(root).as_posix() if root is not None and policy.path.is_relative_to(root)
                else f"policies/{policy.path.name}")
    repository = policy.file.producer.repository
    # A local policy's repository is a name, not a place: a URN says so rather than invent a URL.
    base = (f"git+https://github.com/{repository}" if policy.sigstore is not None
            else f"urn:desktop-qualify:{repository}")
    if committed_at is not None:
        return f"{base}@{committed_at}#{relative}"
    if commit is not None and root is not None and git_blob(root, commit, relative) == policy.sha256:
        return f"{base}@{commit}#{relative}"
    return f"{base}#{relative}"


def _judged(verdict: Verdict) -> list[tuple[str, str]]:
    """The artifacts judged: the candidate files as hashed by the gate, else (an audit) those the statements name."""
    if verdict.candidates_checked:
        return list(verdict.candidate_digests)
    return [(vp.statement.predicate.build.artifact.name, vp.statement.predicate.build.artifact.sha256)
            for vp in verdict.platforms]


def _inputs(verdict: Verdict) -> list[dict[str, object]]:
    """Every statement that verified, by the SHA-256 of its signed bytes (what survives any transport)."""
    inputs: list[dict[str, object]] = [{"uri": vp.file_name, "digest": {"sha256": vp.signed.payload_sha256}}
                                       for vp in verdict.platforms]
    # Each platform's SLSA provenance that verified against its statement is an input of the decision too.
    inputs += [{"uri": vp.file_name, "digest": {"sha256": vp.signed.payload_sha256}}
               for _, vp in sorted(verdict.provenance.items())]
    if verdict.aggregate_signed is not None:
        inputs.append({"uri": f"aggregate{verdict.verifier.file_suffix}",
                       "digest": {"sha256": verdict.aggregate_signed.payload_sha256}})
    return inputs


def summary_statements(verdict: Verdict, policy: Policy, decision: ConsumerDecision, *,
                       release_tag: str | None = None, committed_at: str | None = None) -> list[bytes]:
    """One unsigned VSA statement (RFC 8785 bytes) per artifact judged; the result is the decision's."""
    passed = decision.decision == "QUALIFIED"
    uri = policy_uri(policy, decision.candidate_sha, committed_at=committed_at)
    policy_ref = {"uri": uri, "digest": {"sha256": policy.sha256}}
    inputs = _inputs(verdict)
    out = []
    for name, sha256 in _judged(verdict):
        statement = {
            "_type": IN_TOTO_STATEMENT_TYPE,
            "subject": [{"name": name, "digest": {"sha256": sha256}}],
            "predicateType": VSA_PREDICATE_TYPE,
            "predicate": {
                "verifier": {"id": VSA_VERIFIER_ID, "version": {"desktop-qualify": tool_version()}},
                "timeVerified": decision.checked_at,
                "resourceUri": resource_uri(policy, name, release_tag),
                "policy": policy_ref,
                "inputAttestations": inputs,
                "verificationResult": "PASSED" if passed else "FAILED",
                "verifiedLevels": [VSA_LEVELS[decision.mode]] if passed else [],
            },
        }
        try:
            # Our own output passes the model a reader checks: a name the schema refuses is left out, said so.
            validate_model(VsaStatement, statement, what=f"summary of {name}")
        except QualificationError as exc:
            print(f"note: no Verification Summary for {name[:128]!r}: {exc.message}", file=sys.stderr)
            continue
        out.append(canonical_bytes(statement))
    return out


@dataclass(frozen=True)
class SummaryWriter:
    """Where ``--vsa`` goes and who signs it, settled before anything is verified (a missing key is exit 2)."""

    path: Path
    signer: StatementSigner

    @classmethod
    def for_policy(cls, policy: Policy, path: Path) -> SummaryWriter:
        """A writer to ``path`` signing with the policy's verifier identity (a missing key fails here, exit 2)."""
        return cls(path, signer_for(policy, "verifier"))

    def write(self, statements: list[bytes]) -> int:
        """Sign each statement and write the bundle (one per line) atomically; returns how many were written.

        No statement (nothing could be named) still replaces the file: an older summary never stands in.
        """
        lines = [_one_line(self.signer.sign_statement(statement)) for statement in statements]
        write_output(self.path, b"".join(line + b"\n" for line in lines), option="--vsa")
        return len(lines)


def _one_line(signed: bytes) -> bytes:
    """The signed document on one line; re-serialising the JSON leaves the signed (base64) payload untouched."""
    signed = signed.strip()
    if b"\n" in signed:
        signed = json.dumps(json.loads(signed), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return signed
