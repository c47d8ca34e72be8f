"""What the policy expects, as the checks read it: a view of the one policy object, never a copy of it.

Each expectation is read from the loaded ``Policy`` when a check asks for it, so
the verifier, the producer and the reports cannot hold diverging versions of one
rule. No policy I/O happens in here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from desktop_qualify.evidence_schemas import AppStage, DisplayKind, Platform
from desktop_qualify.qualify_policy import InstallTarget, Policy, StepExpectation


@dataclass(frozen=True)
class UpdateExpectations:
    """The policy's [update] table with the app's state verbs (docs/update-journey.md)."""

    state_write: tuple[str, ...]
    state_check: tuple[str, ...]
    downgrade: Literal["allow", "refuse"]
    downgrade_code: str | None


@dataclass(frozen=True)
class Expectations:
    """The verifier's view of a loaded policy: properties and per-platform methods over ``policy``."""

    policy: Policy

    @classmethod
    def from_policy(cls, policy: Policy) -> Expectations:
        """The view of ``policy`` (kept as the verifier's one way in)."""
        return cls(policy)

    @property
    def mode(self) -> Literal["local", "github"]:
        """The evidence mode this policy's trust mode implies."""
        return self.policy.mode

    @property
    def trust_mode(self) -> str:
        """The policy's trust mode: ``ed25519`` (local keys) or ``sigstore`` (GitHub)."""
        return self.policy.file.trust.mode

    @property
    def repository(self) -> str:
        """OWNER/REPO the evidence must come from."""
        return self.policy.file.producer.repository

    @property
    def workflow(self) -> str:
        """The top-level workflow the run must belong to."""
        return self.policy.file.producer.workflow

    @property
    def ref(self) -> str:
        """The only ref a gated commit may come from."""
        return self.policy.file.producer.ref

    @property
    def allowed_triggers(self) -> frozenset[str]:
        """The workflow events that may start a qualifying run."""
        return frozenset(self.policy.file.producer.allowed_triggers)

    @property
    def runner_environment(self) -> str:
        """``github-hosted`` or ``local``: where the producer must have run."""
        return self.policy.file.producer.runner_environment

    @property
    def required_platforms(self) -> tuple[Platform, ...]:
        """The platforms the release must be qualified on, ``host`` resolved."""
        return self.policy.required_platforms

    @property
    def steps(self) -> Mapping[str, StepExpectation]:
        """Each required journey step and what it must show, in the policy's order (read-only)."""
        return MappingProxyType(self.policy.file.journey.steps)

    @property
    def required_steps(self) -> tuple[str, ...]:
        """The required journey step ids, in the policy's order."""
        return tuple(self.policy.file.journey.steps)

    def accepted_signing(self, platform: Platform) -> frozenset[str]:
        """The signing states accepted for this platform's artifact."""
        return frozenset(self.policy.accepted_signing(platform))

    def layers_for(self, platform: Platform) -> tuple[str, ...] | None:
        """The sandbox layers this platform's worker must report as applied; None without [isolation]."""
        return self.policy.isolation_layers(platform)

    def confinement_layers(self, platform: Platform) -> tuple[str, ...] | None:
        """The layers every app stage on this platform must have run under; None without [confinement] for it."""
        return self.policy.confinement_layers(platform)

    def stage_has_network(self, stage: AppStage) -> bool:
        """Whether the policy lets this app stage keep the machine's network ([confinement] network)."""
        return self.policy.stage_has_network(stage)

    @property
    def build_tools(self) -> tuple[str, ...]:
        """The tools whose version commands the producer runs ([app.build] tools), by name, in the policy's order."""
        return tuple(self.policy.file.app.build.tools)

    @property
    def refuses_with(self) -> Mapping[str, frozenset[str]] | None:
        """The errno names each isolation layer refuses with ([isolation.refuses_with]); None when unnamed."""
        iso = self.policy.file.isolation
        if iso is None or iso.refuses_with is None:
            return None
        return MappingProxyType({name: frozenset(errnos) for name, errnos in iso.refuses_with.items()})

    def install_for(self, platform: Platform) -> InstallTarget | None:
        """This platform's installer kind and executable, if the policy names one."""
        return self.policy.install_target(platform)

    def display_for(self, platform: Platform) -> DisplayKind:
        """The display the probe and journey must have run under on this platform."""
        return self.policy.display(platform)

    @property
    def require_clean_worktree(self) -> bool:
        """Whether the source gate must have seen a clean work tree."""
        return self.policy.file.source.require_clean_worktree

    @property
    def max_statement_bytes(self) -> int:
        """The size bound of one signed statement."""
        return self.policy.file.limits.max_statement_bytes

    @property
    def max_candidate_bytes(self) -> int:
        """The size bound of one candidate artifact, checked before it is hashed."""
        return self.policy.file.limits.max_candidate_bytes

    @property
    def policy_sha256(self) -> str:
        """The SHA-256 of the policy file's bytes, which the evidence must name."""
        return self.policy.sha256

    @property
    def artifact_name(self) -> str:
        """The app's name, which names its artifacts."""
        return self.policy.file.app.name

    @property
    def build_command(self) -> tuple[str, ...]:
        """The app's own build argv (app contract), as the build record must name it."""
        return tuple(self.policy.file.app.build.argv)

    @property
    def probe_command(self) -> tuple[str, ...]:
        """The launch probe's argv, as the probe record must name it."""
        return tuple(self.policy.file.app.probe.argv)

    @property
    def journey_command(self) -> tuple[str, ...]:
        """The journey's argv, as the journey record must name it."""
        return tuple(self.policy.file.app.journey.argv)

    @property
    def probe_checks(self) -> tuple[str, ...]:
        """The named checks the probe must report as passed."""
        return tuple(self.policy.file.app.probe.require)

    @property
    def reproducible(self) -> frozenset[str]:
        """The platforms whose build must reproduce ([reproducible] required, host resolved)."""
        return frozenset(self.policy.reproducible_platforms)

    @property
    def update(self) -> UpdateExpectations | None:
        """The [update] table with the app's state verbs; None when the policy asks for no update journey."""
        f = self.policy.file
        if f.update is None or f.app.state is None:
            return None
        return UpdateExpectations(state_write=tuple(f.app.state.write), state_check=tuple(f.app.state.check),
                                  downgrade="allow" if f.update.downgrade == "allow" else "refuse",
                                  downgrade_code=f.update.downgrade_code)

    @property
    def code_pattern(self) -> str:
        """The pattern the app's refusal codes must match."""
        return self.policy.file.app.codes.pattern
