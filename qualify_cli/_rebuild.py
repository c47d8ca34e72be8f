"""`qualify rebuild`: rebuild a qualified commit here and compare its bytes with the qualified artifact's.

The one command that needs both a stage's verification (the consumer's: the
run's evidence, or its bundle anchored to the rebuilder's policy) and a stage's
build (the producer's: ``git archive`` of the commit, the policy's build
command, the commit's time), so it lives here, where the stages meet.

What it proves: that the source at the qualified commit, built on this machine
by the policy's build command, gives the bytes that were qualified, so the
artifact comes from that commit and not only from the job that held the
signing identity. It compares the build's own output: for an unsigned
artifact, the artifact's digest; for an OS-signed one, the unsigned first
build's digest its reproducibility record carries (a signature holds a time
and a certificate that no rebuild can give).

Exit 0: the rebuilt bytes are the qualified ones. Exit 1: they differ (the
first differing member is named, ``QE_REBUILD_MISMATCH``), the checkout's
source is not the one the build used (``QE_SOURCE_DIGEST_MISMATCH``), or the
evidence does not qualify. Exit 2: the build cannot run here (another
platform, a missing tool, no unsigned digest to compare with).

``--attest FILE --key PEM`` writes the result as a signed statement of its
own (a rebuild attestation, by the rebuilder's local Ed25519 key), which
``qualify audit --rebuild FILE`` shows beside the run it rebuilt.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    IN_TOTO_STATEMENT_TYPE,
    REBUILD_PREDICATE_TYPE,
    Code,
    DigestSet,
    PlatformPredicate,
    QualificationError,
    RebuildPredicate,
    RebuildStatement,
    Subject,
    canonical_bytes,
    utc_now,
)
from desktop_qualify.qualify_archive import first_difference
from desktop_qualify.qualify_files import file_sha256, write_output
from desktop_qualify.qualify_policy import host_platform, load_policy
from desktop_qualify.qualify_runtime import (
    EXIT_OK,
    EXIT_REJECTED,
    check_outputs,
    guarded,
    require_inputs,
    terminal_safe,
    text_stream,
)
from desktop_qualify.qualify_trust import load_private_key, public_key_text, sign_self_signed

from desktop_qualify import consumer, producer


def _say(attest: Path | None, text: str) -> None:
    """Human text: standard output, or standard error when ``--attest -`` took standard output."""
    text_stream(attest).write(terminal_safe(text + "\n"))


def compared_digest(p: PlatformPredicate) -> tuple[str, str]:
    """The digest a rebuild must give (``consumer.required_digest``), and what it is."""
    required = consumer.required_digest(p)
    if required is not None:
        unsigned = p.signature.platform_signing_state == "unsigned"
        return required, ("the qualified (unsigned) artifact" if unsigned else
                          "the qualified build's output before OS signing")
    raise QualificationError(Code.ENVIRONMENT, f"the {p.platform} artifact is OS-signed "
                                               f"({p.signature.platform_signing_state}) and its build record "
                                               "carries no unsigned output digest to compare a rebuild with",
                             hint="qualify under a policy whose [reproducible] requires this platform")


def _qualified_file(given: Path | None, run: consumer.QualifiedRun, name: str, sha256: str) -> Path | None:
    """The qualified artifact's bytes, to name the differing member: --artifact, else beside the evidence."""
    candidates = [given] if given is not None else (
        [run.evidence.parent / "artifacts" / name] if run.evidence is not None else [])
    for path in candidates:
        if path.is_file() and not path.is_symlink() and file_sha256(path) == sha256:
            return path
    return None


def run_rebuild(args: argparse.Namespace) -> int:
    def body() -> int:
        if (args.evidence is None) == (args.bundle is None):
            raise QualificationError(Code.USAGE, "name exactly one of --evidence DIR and --bundle FILE")
        require_inputs("--root", [args.root], "folder")
        require_inputs("--evidence", [args.evidence], "folder")
        require_inputs("--bundle", [args.bundle], "file")
        require_inputs("--artifact", [args.artifact], "file")
        require_inputs("--key", [args.key], "file")
        check_outputs([("--attest", args.attest)],
                      [("--policy", args.policy), ("--evidence", args.evidence), ("--bundle", args.bundle),
                       ("--artifact", args.artifact), ("--key", args.key)])
        if (args.attest is None) != (args.key is None):
            raise QualificationError(Code.USAGE, "--attest FILE and --key PEM go together: the attestation is "
                                                 "signed by the rebuilder's own key")
        policy = load_policy(args.policy, args.root)
        with consumer.qualified_run(policy, evidence=args.evidence, bundle=args.bundle) as run:
            return _rebuild(args, run)

    return guarded(body)


def _rebuild(args: argparse.Namespace, run: consumer.QualifiedRun) -> int:
    verdict = run.verdict
    if not verdict.qualified or verdict.sha is None:
        for reason in verdict.reasons:
            _say(args.attest, f"{reason.code.value}: {reason.message}")
        _say(args.attest, "REJECTED: the evidence does not qualify; only a qualified run is rebuilt")
        return EXIT_REJECTED
    here = host_platform()
    mine = [vp for vp in verdict.platforms if vp.platform == here]
    if not mine:
        built = ", ".join(vp.platform for vp in verdict.platforms)
        raise QualificationError(Code.ENVIRONMENT, f"the run has no {here} build to rebuild here (it built {built})")
    predicate = mine[0].statement.predicate
    record = predicate.build
    expected, what = compared_digest(predicate)
    # The rebuilder's key is read only once the build and everything it started have ended, and its folder is
    # hidden from the build (which is the commit's code); here only that it is a readable file is checked.
    key_folders = [args.key.resolve().parent] if args.key is not None else []
    _say(args.attest, f"rebuilding {record.artifact.name} of {verdict.sha} from {run.app_source} ...")
    difference: str | None = None
    # The build can run for many minutes: its progress (a live line on a terminal, timestamped lines and a
    # heartbeat in a log) goes to standard error, never into the result on standard output or --attest -.
    progress = producer.Progress(f"rebuild {here}")
    with tempfile.TemporaryDirectory(prefix="qualify-rebuild-") as scratch:
        with progress.stage("build") as said:
            rebuilt = producer.rebuild(run.policy, app_source=run.app_source, sha=verdict.sha,
                                       ref=predicate.source_gate.ref, platform=here, work=Path(scratch),
                                       protected=key_folders, observer=progress.running)
            said.append(f"{rebuilt.output.name} {rebuilt.size} bytes sha256={rebuilt.sha256[:16]}")
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(rebuilt.output, args.keep / rebuilt.output.name)
        if rebuilt.source_digest != record.source_digest:
            difference = (f"{Code.SOURCE_DIGEST_MISMATCH.value}: git archive of the checkout at {verdict.sha[:12]} "
                          f"gives source digest {rebuilt.source_digest}, the build recorded {record.source_digest}")
        elif rebuilt.sha256 != expected:
            qualified = _qualified_file(args.artifact, run, record.artifact.name, record.artifact.sha256)
            where = (first_difference(qualified, rebuilt.output) if qualified is not None else
                     "not named: give --artifact, the qualified artifact file, to compare member by member")
            difference = (f"{Code.REBUILD_MISMATCH.value}: the rebuilt output sha256 {rebuilt.sha256} is not {what} "
                          f"({expected}); first difference: {where}")
    if difference is None:
        _say(args.attest, f"source digest {rebuilt.source_digest}: the build's")
        _say(args.attest, f"REBUILT: {rebuilt.output.name} sha256 {rebuilt.sha256} is {what}")
    else:
        _say(args.attest, difference)
    key = load_private_key(args.key) if args.key is not None else None
    if args.attest is not None and key is not None:
        statement = RebuildStatement(
            type_=IN_TOTO_STATEMENT_TYPE,
            subject=[Subject(name=record.artifact.name, digest=DigestSet(sha256=record.artifact.sha256))],
            predicateType=REBUILD_PREDICATE_TYPE,
            predicate=RebuildPredicate(
                commit=verdict.sha, platform=here, run_id=predicate.run.run_id, attempt=predicate.run.attempt,
                artifact=record.artifact, expected_sha256=expected, rebuilt_sha256=rebuilt.sha256,
                rebuilt_size=rebuilt.size, source_digest=rebuilt.source_digest, matches=difference is None,
                first_difference=None if difference is None else difference[:4000], tools=rebuilt.tools,
                rebuilt_at=utc_now(), rebuilder_public_key=public_key_text(key)))
        write_output(args.attest, sign_self_signed(canonical_bytes(statement), key), option="--attest")
        _say(args.attest, f"wrote the rebuild attestation {args.attest}")
    return EXIT_OK if difference is None else EXIT_REJECTED
