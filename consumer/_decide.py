"""From a verdict to the consumer-decision document: what was decided, by whom, under what."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import ConsumerDecision, Platform, PolicyRef, Signer, utc_now
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_runtime import tool_version
from desktop_qualify.qualify_trust import GitHubIdentity, SignerIdentity
from desktop_qualify.qualify_verify import Verdict

Mode = Literal["release-gate", "local-check", "audit"]


def policy_ref(policy: Policy, given: str) -> PolicyRef:
    """The policy as the user named it (path as given), with its name and the SHA-256 of its bytes."""
    return PolicyRef(name=policy.file.name, path=given[:4000], sha256=policy.sha256)


# How a file the policy names is shown: by default its path here; a bundle's audit names it inside the bundle.
ShowPath = Callable[[Path], str]


def _signer(statement: str, where: Platform | None, who: SignerIdentity, policy: Policy,
            show: ShowPath = str) -> Signer:
    if who.kind == "ed25519":
        keyring = policy.resolve(policy.ed25519.keyring)
        return Signer(statement=statement, platform=where, kind="ed25519", keyid=who.keyid, key_name=who.name[:256],
                      keyring=show(keyring)[:4000])
    claims = who.claims
    issuer = claims.issuer if isinstance(claims, GitHubIdentity) else None
    run_uri = claims.run_invocation_uri if isinstance(claims, GitHubIdentity) else None
    return Signer(statement=statement, platform=where, kind="sigstore", keyid=who.keyid, san=who.name[:4000],
                  issuer=issuer, run_uri=run_uri)


def signers(verdict: Verdict, policy: Policy, show: ShowPath = str) -> list[Signer]:
    """Every verified statement's signer: platform statements first, then their provenance, then the aggregate."""
    out = [_signer(vp.file_name, vp.platform, vp.signed.signer, policy, show) for vp in verdict.platforms]
    out += [_signer(provenance.file_name, platform, provenance.signed.signer, policy, show)
            for platform, provenance in sorted(verdict.provenance.items())]
    if verdict.aggregate_signed is not None:
        name = f"aggregate{verdict.verifier.file_suffix}"
        out.append(_signer(name, None, verdict.aggregate_signed.signer, policy, show))
    return out


# A note that starts so is shown first, before the table (text), under the heading (summary, report), not among
# the notes at the end: what a reader must see before trusting the rest (``_render.split_notes``).
DIRTY_TREE_NOTE = "dirty work tree: "


def dirty_tree_note(verdict: Verdict, policy: Policy) -> str | None:
    """The note for verified statements whose source gate recorded ``worktree_clean = false`` under a policy that
    allows it (one that requires a clean tree rejects them: ``QE_WORKTREE_DIRTY``); None when every tree was clean.
    """
    if policy.file.source.require_clean_worktree:
        return None
    dirty = [vp for vp in verdict.platforms if not vp.statement.predicate.source_gate.worktree_clean]
    if not dirty:
        return None
    where = ", ".join(f"{vp.platform} (commit {vp.statement.predicate.source_gate.sha[:12]})" for vp in dirty)
    return (f"{DIRTY_TREE_NOTE}the source gate recorded uncommitted changes to tracked files "
            f"(worktree_clean = false) for {where}; policy {policy.file.name} allows it "
            "([source] require_clean_worktree = false): the artifact was built from the commit (git archive), but "
            "the checkout it was qualified from held other changes")


def decide(verdict: Verdict, policy: Policy, *, policy_path: str, mode: Mode,
           notes: list[str] | None = None, show: ShowPath = str) -> ConsumerDecision:
    """The consumer-decision document for ``verdict``: who decided under what, on which run, and why."""
    run = verdict.run
    dirty = dirty_tree_note(verdict, policy)
    notes = [*([dirty] if dirty else []), *(notes or [])]
    # With no verified platform statement, the run is still known when its aggregate verified.
    aggregated = verdict.aggregate.predicate.run if verdict.aggregate is not None else None
    return ConsumerDecision(
        decision="QUALIFIED" if verdict.qualified else "REJECTED",
        mode=mode,
        trust_mode=policy.file.trust.mode,
        policy=policy_ref(policy, policy_path),
        tool_version=tool_version(),
        candidate_sha=verdict.sha or (aggregated.sha if aggregated else None),
        run_id=run.run_id if run else aggregated.run_id if aggregated else None,
        attempt=run.attempt if run else aggregated.attempt if aggregated else None,
        checked_at=utc_now(),
        signers=signers(verdict, policy, show),
        rows=verdict.rows(),
        reasons=verdict.reasons,
        notes=notes,
    )
