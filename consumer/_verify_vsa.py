"""`qualify verify-vsa`: trust the gate's verdict on one artifact without re-running the gate, offline.

Checks, in this order, each refusal with its own code (exit 1):

1. every summary in the file is signed by the policy's verifier identity: the
   keyring's ``verifier`` key (local mode) or the policy's ``[verifier]``
   workflow under the pinned trusted root (GitHub mode) (``QE_VSA_SIGNATURE``);
   a file holding one forged line is refused whole;
2. a summary's subject digest is the artifact's, hashed here (``QE_VSA_SUBJECT``);
3. its policy digest is the committed policy's, this ``--policy`` file (``QE_VSA_POLICY``);
4. its result is PASSED (``QE_VSA_FAILED``);
5. its ``verifiedLevels`` include the level asked for (``QE_VSA_LEVEL``):
   ``--level``, by default the gate's level for the policy's mode
   (``DESKTOP_QUALIFIED_RELEASE_GATE`` in GitHub mode, else
   ``DESKTOP_QUALIFIED_LOCAL_CHECK``), so a summary ``qualify audit --vsa``
   wrote (``DESKTOP_QUALIFIED_AUDIT``) never passes for a gate's unless asked
   for by name. A level the project never writes is refused with that code too.

Every summary naming the artifact must pass 3 to 5: a later FAILED summary of
the same bytes is never outvoted by an earlier PASSED one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    VSA_LEVELS,
    Code,
    QualificationError,
    VsaStatement,
    parse_vsa_statement,
    read_bounded,
)
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, guarded, require_inputs, terminal_safe
from desktop_qualify.qualify_trust import StatementVerifier, vsa_verifier_for
from desktop_qualify.qualify_verify import CandidateError, stable_sha256

# What `release.yml` names the summaries file it attaches (an in-toto attestation bundle: JSON Lines).
SUMMARIES_SUFFIX = ".intoto.jsonl"
# One summary is a few KiB (a Sigstore bundle with its certificate ~10 KiB); an audit of many runs writes many.
MAX_VSA_LINE_BYTES = 256 * 1024
MAX_VSA_LINES = 4096
MAX_VSA_FILE_BYTES = 64 * 1024 * 1024
# What the trust layer says about a signature or its signer: each is the summary's signature refused.
_SIGNATURE_CODES = frozenset({Code.SIGNATURE_MISSING, Code.SIGNATURE_INVALID, Code.SIGNER_UNTRUSTED,
                              Code.WORKFLOW_IDENTITY_MISMATCH, Code.BUILDER_REF_MISMATCH, Code.REF_NOT_MAIN,
                              Code.SHA_MISMATCH})


@dataclass(frozen=True)
class AcceptedSummary:
    line: int
    statement: VsaStatement
    signer: str


def _lines(data: bytes, what: str) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise QualificationError(Code.VSA_SUBJECT, f"{what}: holds no summary, so none names the artifact")
    if len(lines) > MAX_VSA_LINES:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what}: {len(lines)} summaries, above {MAX_VSA_LINES}")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise QualificationError(Code.SCHEMA_INVALID, f"{what}: line {number} is empty (one summary a line)")
        if len(line) > MAX_VSA_LINE_BYTES:
            raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what}: line {number} is {len(line)} bytes, above "
                                                              f"{MAX_VSA_LINE_BYTES}")
    return lines


def check_signatures(data: bytes, verifier: StatementVerifier, what: str) -> list[tuple[VsaStatement, str]]:
    """Step 1: every line verifies under the policy's verifier identity, and is a VSA."""
    out = []
    for number, line in enumerate(_lines(data, what), start=1):
        where = f"{what} line {number}"
        try:
            verified = verifier.verify_statement(line, role="verifier", what=where)
        except QualificationError as exc:
            if exc.code in _SIGNATURE_CODES:
                raise QualificationError(Code.VSA_SIGNATURE, f"{exc.message} ({exc.code.value})",
                                         hint="only the policy's verifier identity may sign a summary: the "
                                              "keyring's verifier key, or the policy's [verifier] workflow") from exc
            raise
        out.append((parse_vsa_statement(verified.payload, what=where), verified.signer.name))
    return out


def gate_level(policy: Policy) -> str:
    """The level the release gate writes under ``policy``: what a summary must assert unless told otherwise."""
    return VSA_LEVELS["release-gate" if policy.sigstore is not None else "local-check"]


def check_level(level: str | None, policy: Policy) -> str:
    """``--level``: one the project writes (exit 2 otherwise); None is the gate's level for the policy's mode."""
    if level is None:
        return gate_level(policy)
    if level not in VSA_LEVELS.values():
        raise QualificationError(Code.USAGE, f"--level {level[:80]!r} is not a level this project writes: one of "
                                             f"{', '.join(VSA_LEVELS.values())}")
    return level


def check_summaries(data: bytes, artifact_sha256: str, policy: Policy, verifier: StatementVerifier,
                    what: str, *, level: str | None = None) -> list[AcceptedSummary]:
    """The summaries of the artifact, once each check in the module's order has passed."""
    signed = check_signatures(data, verifier, what)
    # Step 2: the subject is the artifact's bytes, not its name.
    mine = [AcceptedSummary(number, statement, signer) for number, (statement, signer) in enumerate(signed, start=1)
            if statement.artifact.digest.sha256 == artifact_sha256]
    if not mine:
        named = ", ".join(sorted({s.artifact.name for s, _ in signed}))[:300]
        raise QualificationError(Code.VSA_SUBJECT, f"{what}: no summary's subject has the artifact's SHA-256 "
                                                   f"{artifact_sha256} (it summarises {named})")
    for summary in mine:
        _check_passed_under(policy, summary.statement, f"{what} line {summary.line}", level)
    return mine


def _check_passed_under(policy: Policy, statement: VsaStatement, where: str, level: str | None = None) -> None:
    predicate = statement.predicate
    # Step 3: judged under this very policy file, byte for byte.
    if predicate.policy.digest.sha256 != policy.sha256:
        raise QualificationError(Code.VSA_POLICY, f"{where}: judged under policy {predicate.policy.uri[:200]} "
                                                  f"(sha256 {predicate.policy.digest.sha256[:16]}), not "
                                                  f"{policy.path} (sha256 {policy.sha256[:16]})")
    # Step 4: the gate's result, as it signed it.
    if predicate.verificationResult != "PASSED":
        raise QualificationError(Code.VSA_FAILED, f"{where}: the gate's result for {statement.artifact.name} is "
                                                  f"{predicate.verificationResult}")
    # Step 5: the level asked for, as the gate signed it: an audit's summary is not a gate's.
    wanted = level or gate_level(policy)
    if wanted not in predicate.verifiedLevels:
        levels = ", ".join(predicate.verifiedLevels) or "none"
        raise QualificationError(Code.VSA_LEVEL, f"{where}: the summary of {statement.artifact.name} asserts "
                                                 f"{levels}, not {wanted}",
                                 hint="a summary qualify audit --vsa wrote passes only with --level "
                                      f"{VSA_LEVELS['audit']}")


def check_release_summaries(data: bytes, qualified: Mapping[str, str], policy: Policy, verifier: StatementVerifier,
                            what: str) -> int:
    """A release's summaries asset (read-back): every summary signed, PASSED under this policy, for an artifact
    the release's bundle qualified under that name and digest. Returns how many there are."""
    signed = check_signatures(data, verifier, what)
    for number, (statement, _) in enumerate(signed, start=1):
        subject = statement.artifact
        if qualified.get(subject.name) != subject.digest.sha256:
            raise QualificationError(Code.VSA_SUBJECT, f"{what} line {number}: summarises {subject.name} "
                                                       f"(sha256 {subject.digest.sha256[:16]}), which the release's "
                                                       "bundle did not qualify under that name")
        _check_passed_under(policy, statement, f"{what} line {number}")
    return len(signed)


def artifact_digest(policy: Policy, path: Path) -> str:
    """The artifact's SHA-256, of the bytes read through one handle (a file changing meanwhile is refused)."""
    try:
        digest, _ = stable_sha256(path, policy.file.limits.max_candidate_bytes)
    except (CandidateError, OSError) as exc:
        raise QualificationError(Code.USAGE, f"--artifact {path}: cannot be hashed ({exc})") from exc
    return digest


def _read_vsa(path: Path) -> bytes:
    """The VSA file's bytes; one that is no regular file (a FIFO, a device) is an unusable input: exit 2."""
    try:
        return read_bounded(path, max_bytes=MAX_VSA_FILE_BYTES, what=str(path))
    except QualificationError as exc:
        if exc.code == Code.INPUT_NOT_REGULAR:
            raise QualificationError(Code.USAGE, f"VSA {exc.code.value}: {exc.message}",
                                     hint="name the summaries file itself (a regular file)") from exc
        raise


def run_verify_vsa(args: argparse.Namespace) -> int:
    """Exit 0: the summary says this gate passed these bytes under this policy; 1: refused; 2: unusable input."""

    def body() -> int:
        require_inputs("--root", [args.root], "folder")
        require_inputs("--artifact", [args.artifact], "file")
        require_inputs("VSA", [args.vsa], "file")
        policy = load_policy(args.policy, args.root)
        level = check_level(getattr(args, "level", None), policy)
        verifier = vsa_verifier_for(policy)
        digest = artifact_digest(policy, args.artifact)
        data = _read_vsa(args.vsa)
        accepted = check_summaries(data, digest, policy, verifier, str(args.vsa), level=level)
        lines = [f"ok   {args.vsa} line {s.line}: {s.statement.artifact.name} sha256 {digest} "
                 f"{s.statement.predicate.verificationResult} "
                 f"({', '.join(s.statement.predicate.verifiedLevels)}) at {s.statement.predicate.timeVerified}, "
                 f"signed by {s.signer}" for s in accepted]
        lines.append(f"VSA ACCEPTED: {args.artifact.name} passed at {level} under {policy.path.name} "
                     f"(sha256 {policy.sha256[:16]})")
        sys.stdout.write(terminal_safe("\n".join(lines) + "\n"))
        return EXIT_OK

    return guarded(body)
