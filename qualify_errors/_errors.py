"""Stable error codes and the one error type every stage raises.

Codes are part of the command-line contract (docs/design.md §7): add new
ones, never rename or reuse one. docs/codes.md documents each.
"""

from __future__ import annotations

import enum


class Code(enum.StrEnum):
    """A stable rejection or error code."""

    # Evidence parsing and shape
    JSON_MALFORMED = "QE_JSON_MALFORMED"
    JSON_DUPLICATE_KEY = "QE_JSON_DUPLICATE_KEY"
    JSON_NONFINITE = "QE_JSON_NONFINITE"
    JSON_INVALID_UTF8 = "QE_JSON_INVALID_UTF8"
    JSON_TOO_DEEP = "QE_JSON_TOO_DEEP"
    EVIDENCE_TOO_LARGE = "QE_EVIDENCE_TOO_LARGE"
    EVIDENCE_MISSING = "QE_EVIDENCE_MISSING"
    EVIDENCE_UNEXPECTED = "QE_EVIDENCE_UNEXPECTED"
    # An input named as a file that is a FIFO, a device or a socket: refused before a byte is read.
    INPUT_NOT_REGULAR = "QE_INPUT_NOT_REGULAR"
    SCHEMA_INVALID = "QE_SCHEMA_INVALID"
    PREDICATE_TYPE_UNKNOWN = "QE_PREDICATE_TYPE_UNKNOWN"
    SUBJECT_MISMATCH = "QE_SUBJECT_MISMATCH"
    # Signatures and identity
    SIGNATURE_MISSING = "QE_SIGNATURE_MISSING"
    SIGNATURE_INVALID = "QE_SIGNATURE_INVALID"
    SIGNER_UNTRUSTED = "QE_SIGNER_UNTRUSTED"
    WORKFLOW_IDENTITY_MISMATCH = "QE_WORKFLOW_IDENTITY_MISMATCH"
    # A team's statement signed by desktop-qualify's reusable workflows at another tag or commit than its policy
    # pins ([producer.builder]): the right files, another version of them.
    BUILDER_REF_MISMATCH = "QE_BUILDER_REF_MISMATCH"
    # The evidence is of the other trust mode than the policy's (local statements under a GitHub policy).
    MODE_MISMATCH = "QE_MODE_MISMATCH"
    REF_NOT_MAIN = "QE_REF_NOT_MAIN"
    SHA_MISMATCH = "QE_SHA_MISMATCH"
    # The build's source digest is not the digest of `git archive` of the commit, recomputed from a checkout.
    SOURCE_DIGEST_MISMATCH = "QE_SOURCE_DIGEST_MISMATCH"
    NOT_MAIN_HEAD = "QE_NOT_MAIN_HEAD"
    MAIN_UNPROTECTED = "QE_MAIN_UNPROTECTED"
    WORKTREE_DIRTY = "QE_WORKTREE_DIRTY"
    # A record claims something its mode cannot observe (local evidence claiming a protected main).
    CLAIM_UNOBSERVABLE = "QE_CLAIM_UNOBSERVABLE"
    RUN_MISMATCH = "QE_RUN_MISMATCH"
    # Coverage and artifacts
    PLATFORM_MISSING = "QE_PLATFORM_MISSING"
    PLATFORM_DUPLICATE = "QE_PLATFORM_DUPLICATE"
    PLATFORM_UNKNOWN = "QE_PLATFORM_UNKNOWN"
    AGGREGATE_MISSING = "QE_AGGREGATE_MISSING"
    AGGREGATE_MISMATCH = "QE_AGGREGATE_MISMATCH"
    # SLSA Provenance v1 beside each platform statement: absent, or not the platform statement's facts (its
    # subject, run, commit, workflow, policy digest, builder) or not its signer's.
    PROVENANCE_MISSING = "QE_PROVENANCE_MISSING"
    PROVENANCE_MISMATCH = "QE_PROVENANCE_MISMATCH"
    ARTIFACT_MISSING = "QE_ARTIFACT_MISSING"
    ARTIFACT_UNEXPECTED = "QE_ARTIFACT_UNEXPECTED"
    ARTIFACT_DIGEST_MISMATCH = "QE_ARTIFACT_DIGEST_MISMATCH"
    # A candidate file larger than the policy's [limits] max_candidate_bytes: refused before it is hashed.
    ARTIFACT_TOO_LARGE = "QE_ARTIFACT_TOO_LARGE"
    # Qualification bundles (the auditor's release asset)
    BUNDLE_INVALID = "QE_BUNDLE_INVALID"
    BUNDLE_MANIFEST_MISMATCH = "QE_BUNDLE_MANIFEST_MISMATCH"
    # A bundle whose policy (or, in local mode, keyring) the auditor's own does not vouch for.
    BUNDLE_UNANCHORED = "QE_BUNDLE_UNANCHORED"
    # Post-release read-back of the public download channel
    RELEASE_NOT_PUBLISHED = "QE_RELEASE_NOT_PUBLISHED"
    RELEASE_ASSET_MISSING = "QE_RELEASE_ASSET_MISSING"
    RELEASE_ASSET_UNQUALIFIED = "QE_RELEASE_ASSET_UNQUALIFIED"
    # Stage outcomes
    SOURCE_GATE_FAILED = "QE_SOURCE_GATE_FAILED"
    BUILD_FAILED = "QE_BUILD_FAILED"
    # A build the policy requires to reproduce: its two builds' digests differ, or its `reproduced` flag
    # contradicts them.
    BUILD_NOT_REPRODUCED = "QE_BUILD_NOT_REPRODUCED"
    # `qualify rebuild`: the rebuilt artifact's digest is not the qualified one.
    REBUILD_MISMATCH = "QE_REBUILD_MISMATCH"
    # `qualify audit --rebuild`: an attestation's expected digest or `matches` flag contradicts what the audited
    # run's own build record says a rebuild must give (shown as a note, never as a reproduced build).
    REBUILD_CLAIM_CONTRADICTED = "QE_REBUILD_CLAIM_CONTRADICTED"
    ARTIFACT_SIGNATURE_FAILED = "QE_ARTIFACT_SIGNATURE_FAILED"
    PLATFORM_SIGNING_UNACCEPTED = "QE_PLATFORM_SIGNING_UNACCEPTED"
    INSTALL_FAILED = "QE_INSTALL_FAILED"
    # The installer's own check of the package's signature (pkgutil, signtool) did not pass where the policy accepts
    # only signed builds for the platform, or its record contradicts itself.
    INSTALLER_SIGNATURE_REFUSED = "QE_INSTALLER_SIGNATURE_REFUSED"
    PROBE_FAILED = "QE_PROBE_FAILED"
    JOURNEY_INCOMPLETE = "QE_JOURNEY_INCOMPLETE"
    # A kernel-refusal step refused by another layer than the policy's for its platform, by no layer, or by
    # one its worker did not report applied; or an ordinary step that names a refusing layer.
    STEP_WRONG_LAYER = "QE_STEP_WRONG_LAYER"
    # Reading back a Verification Summary Attestation (qualify verify-vsa)
    VSA_SIGNATURE = "QE_VSA_SIGNATURE"
    VSA_SUBJECT = "QE_VSA_SUBJECT"
    VSA_POLICY = "QE_VSA_POLICY"
    VSA_FAILED = "QE_VSA_FAILED"
    # The summary does not assert the level asked for (the gate's, by default), or names a level the project
    # never writes.
    VSA_LEVEL = "QE_VSA_LEVEL"
    # The update journey: state lost on upgrade, a failed rollback, a downgrade rule broken, no journey at all.
    UPDATE_FAILED = "QE_UPDATE_FAILED"
    # The previous release an update journey starts from does not audit, or its artifact is not the audited one.
    PREVIOUS_RELEASE_UNQUALIFIED = "QE_PREVIOUS_RELEASE_UNQUALIFIED"
    # GitHub mode: the newest published release is not the last one the gate passed for an ancestor of the
    # candidate (its tag is not the qualified commit, no PASSED summaries, re-published over a newer release).
    PREVIOUS_RELEASE_NOT_VOUCHED = "QE_PREVIOUS_RELEASE_NOT_VOUCHED"
    # Confinement of app-controlled code (build, its tools, a second build, probe, journey, update verbs): a
    # stage ran with less than the policy's [confinement] requires, or its record contradicts itself.
    STAGE_UNCONFINED = "QE_STAGE_UNCONFINED"
    # The producer found the artifact or the installed tree changed by an app stage that must not change it.
    APP_STAGE_TAMPERED = "QE_APP_STAGE_TAMPERED"
    # The signing job refuses a run job's unsigned record whose schema, digests or claims do not hold.
    UNSIGNED_RUN_INVALID = "QE_UNSIGNED_RUN_INVALID"
    # Configuration and environment (exit status 2)
    POLICY_INVALID = "QE_POLICY_INVALID"
    KEY_INVALID = "QE_KEY_INVALID"
    USAGE = "QE_USAGE"
    # An output option names one of the same command's inputs (by device and inode, links resolved): refused
    # before any work, the input untouched.
    OUTPUT_IS_INPUT = "QE_OUTPUT_IS_INPUT"
    # The command was interrupted (Ctrl-C, SIGINT): exit status 130, as a shell reports it.
    INTERRUPTED = "QE_INTERRUPTED"
    ENVIRONMENT = "QE_ENVIRONMENT"
    # The producer cannot confine app code on this machine (no bubblewrap, user namespaces refused...).
    CONFINEMENT_UNAVAILABLE = "QE_CONFINEMENT_UNAVAILABLE"
    # A toolchain the policy's probe, journey or state commands name cannot be resolved on the producer's machine.
    TOOLCHAIN_UNAVAILABLE = "QE_TOOLCHAIN_UNAVAILABLE"
    # A bug: an error no check anticipated (printed by the guarded main, exit status 2).
    INTERNAL = "QE_INTERNAL"


# Codes that mean "the caller or the machine is wrong", not "the evidence does
# not qualify": docs/design.md §7 gives them exit status 2.
_USAGE_CODES = frozenset({Code.POLICY_INVALID, Code.KEY_INVALID, Code.USAGE, Code.OUTPUT_IS_INPUT,
                          Code.ENVIRONMENT, Code.CONFINEMENT_UNAVAILABLE, Code.TOOLCHAIN_UNAVAILABLE,
                          Code.SOURCE_GATE_FAILED,
                          # Raised by the producer's source gate on this machine's own checkout; in a decision (a
                          # statement recording a dirty tree) it is a reason, and the decision's rejection exits 1.
                          Code.WORKTREE_DIRTY, Code.INTERNAL})
# An interruption exits as a shell reports SIGINT (128 + 2), so a script can tell it from a usage error.
EXIT_INTERRUPTED = 130


class QualificationError(Exception):
    """The base error: a stable code, a message naming the input, a hint.

    The command-line entry points catch only this class; anything else
    escaping is a bug.
    """

    def __init__(self, code: Code, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.message = message
        self.hint = hint

    @property
    def exit_status(self) -> int:
        """The exit status the code calls for: 2 for a usage, policy, key, environment (confinement unavailable
        included), source-gate (a dirty work tree included), output-is-input or internal fault, 130 for an
        interruption, 1 for every other code (a rejection).
        """
        if self.code == Code.INTERRUPTED:
            return EXIT_INTERRUPTED
        return 2 if self.code in _USAGE_CODES else 1

    def diagnostics(self) -> str:
        """The message a person reads: what went wrong and what to do."""
        text = f"{self.code.value}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text
