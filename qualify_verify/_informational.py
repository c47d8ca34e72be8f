"""The evidence fields that carry information only: no check reads them, and this is the one place that says so.

Every other leaf of a platform statement, its provenance or an aggregate is checked: against
the signature, the policy, the candidate files, another record, or the other
statements of the run. ``tests/unit/test_evidence_leaves.py`` changes each
leaf of a valid qualification, re-signs it with the trusted keys and re-binds
the aggregate, and requires the consumer to refuse the change unless the leaf
matches a pattern here; a new schema field that no check reads therefore fails
the suite until someone decides what it means.

Patterns are dotted paths into the statement's JSON; ``*`` stands for any
list index or mapping key.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PLATFORM_INFORMATIONAL: Mapping[str, str] = MappingProxyType({
    "predicate.produced_at": "when the job emitted; the verifier orders nothing by the producer's clock",
    "predicate.source_gate.observations.*.source": "what the gate read, for people; the typed fields carry the facts",
    "predicate.source_gate.observations.*.value": "what the gate read, for people; the typed fields carry the facts",
    "predicate.source_gate.observations.*.observed_at": "when the gate read it (the producer's clock)",
    "predicate.build.tools.*": "tool versions, for reproducing the build",
    "predicate.build.started_at": "the producer's clock",
    "predicate.build.duration_ms": "a duration",
    "predicate.build.reproduction.duration_ms": "a duration",
    "predicate.build.reproduction.second_size": "the second output's size, for people; its digest is checked",
    "predicate.build.reproduction.variations.*.name": "what the second build varied, for people; the digests decide",
    "predicate.build.reproduction.variations.*.first": "a condition of the first build, for people",
    "predicate.build.reproduction.variations.*.second": "the condition the second build ran under, for people",
    "predicate.install.duration_ms": "a duration",
    # What the producer's unpack counted and hashed. The verifier holds the archive's digest (and checks the
    # candidate file against it) but does not unpack the archive again, so beyond "something was installed"
    # and "a digest was taken" these are the producer's word; the probe's executable digest is what is checked.
    "predicate.install.file_count": "counted by the producer's unpack; checked only to be non-zero",
    "predicate.install.total_bytes": "counted by the producer's unpack; checked only to be non-zero",
    "predicate.install.manifest_sha256": "the producer's manifest digest; checked only to be present (non-zero)",
    "predicate.launch_probe.duration_ms": "a duration",
    "predicate.launch_probe.stderr_excerpt": "bounded free text from the app; logs are never evidence",
    "predicate.launch_probe.report.app_version": "the app's version string; the build SHA identifies the build",
    "predicate.launch_probe.report.checks.*.detail": "bounded free text from the app about one named check",
    "predicate.launch_probe.report.isolation_layers.*.detail": "why a sandbox layer was or was not applied, for people",
    "predicate.journey.isolation_layers.*.detail": "why a sandbox layer was or was not applied, for people",
    "predicate.journey.duration_ms": "a duration",
    "predicate.journey.stderr_excerpt": "bounded free text from the app; logs are never evidence",
    "predicate.journey.steps.*.detail": "bounded free text from the app about one step",
    # The notarization hook's result: its outcome is checked against the OS signing state; these say more.
    "predicate.signature.notarization.submission_id": "Apple's id, for `xcrun notarytool log`; checked present "
                                                      "when accepted, absent when skipped",
    "predicate.signature.notarization.stapled": "whether the ticket is stapled (Gatekeeper checks online if not); "
                                                "the state is 'notarized' either way",
    "predicate.signature.notarization.detail": "bounded free text from the hook",
    # The update journey ([update]). What the producer's audit of the previous release's bundle established
    # beyond its commit and artifact digest (both checked): the verifier does not hold that bundle.
    "predicate.update.previous.bundle_sha256": "the previous bundle's digest, to find it again; the producer "
                                               "audited it before the job (QE_PREVIOUS_RELEASE_UNQUALIFIED)",
    "predicate.update.previous.run_id": "the previous run's id, for people; its commit is checked",
    "predicate.update.previous.policy_sha256": "the policy the previous bundle was anchored to, for people",
    "predicate.update.previous.artifact.size": "the previous artifact's size; its digest is checked",
    # Each install of the journey: as the candidate's own install, counted by the producer's unpack.
    "predicate.update.*.file_count": "counted by the producer's unpack; checked only to be non-zero",
    "predicate.update.*.total_bytes": "counted by the producer's unpack; checked only to be non-zero",
    "predicate.update.*.manifest_sha256": "the producer's manifest digest; checked only to be present (non-zero)",
    "predicate.update.*.duration_ms": "a duration",
    "predicate.update.*.stderr_excerpt": "bounded free text from the app; logs are never evidence",
    "predicate.update.*.report.app_version": "the app's version string; the build SHA identifies the build",
    "predicate.update.*.report.detail": "bounded free text from the app about its state",
    "predicate.update.upgrade_probe.report.checks.*.detail": "bounded free text from the app about one named check",
    "predicate.update.upgrade_probe.report.isolation_layers.*.detail": "why a sandbox layer was or was not "
                                                                      "applied, for people",
    # What each run of app code ran under ([confinement]): its stage, mechanism, layers and network are checked.
    "predicate.confinement.*.detail": "what the confinement adapter bound in and observed, for people; the "
                                      "mechanism, layers and network flag are checked",
    # The tools the probe, journey and state commands named by placeholder ({python}, [app.toolchains]): the
    # commands keep their placeholders, and what decides is what the app's records show, not which build of a
    # tool ran them. Recorded so that an auditor can tell which interpreter or runtime a run used.
    "predicate.toolchains.*.*": "a tool as the producer's machine resolved it (name, path, digest, version), for "
                                "people reproducing the run",
    "predicate.toolchains.*.folders.*": "a folder bound read-only for a tool, for people",
    # A refusal's exit status is the app's own: checked to be non-zero (an allowed check's is checked to be 0).
    "predicate.update.downgrade_check.exit_code": "the app's refusal status, checked non-zero under a refusing "
                                                  "policy",
})

AGGREGATE_INFORMATIONAL: Mapping[str, str] = MappingProxyType({
    "predicate.aggregated_at": "the aggregate job's clock",
})


PROVENANCE_INFORMATIONAL: Mapping[str, str] = MappingProxyType({
    # The digest is checked against the policy in force; its path is where the producer's checkout held it,
    # and an auditor may hold the same bytes elsewhere.
    "predicate.buildDefinition.externalParameters.policy.path": "where the producer found the policy; its "
                                                                 "SHA-256 is checked",
})
_TABLES = {"platform": PLATFORM_INFORMATIONAL, "aggregate": AGGREGATE_INFORMATIONAL,
           "provenance": PROVENANCE_INFORMATIONAL}


def matches(pattern: str, path: tuple[str, ...]) -> bool:
    """Whether a dotted ``pattern`` (``*`` for any index or key) names the leaf at ``path``."""
    parts = pattern.split(".")
    return len(parts) == len(path) and all(p in ("*", q) for p, q in zip(parts, path, strict=True))


def is_informational(kind: str, path: tuple[str, ...]) -> bool:
    """Whether the leaf at ``path`` of a ``kind`` ("platform", "aggregate", "provenance") statement is informational."""
    table = _TABLES[kind]
    return any(matches(pattern, path) for pattern in table)
