"""What the policy expects, flattened for the checks (no policy I/O in here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from desktop_qualify.evidence_schemas import DisplayKind, Platform
from desktop_qualify.qualify_policy import InstallTarget, Policy, StepExpectation


@dataclass(frozen=True)
class UpdateExpectations:
    """The policy's [update] table with the app's state verbs (README, "The update journey")."""

    state_write: tuple[str, ...]
    state_check: tuple[str, ...]
    downgrade: Literal["allow", "refuse"]
    downgrade_code: str | None


@dataclass(frozen=True)
class Expectations:
    trust_mode: str
    repository: str
    workflow: str
    ref: str
    allowed_triggers: frozenset[str]
    runner_environment: str
    required_platforms: tuple[Platform, ...]
    # Each required journey step and what it must show, in the policy's order.
    steps: Mapping[str, StepExpectation]
    accepted_signing: Mapping[str, frozenset[str]]
    # The sandbox layers each platform's worker must report as applied, in the policy's order; None when the
    # policy has no [isolation] (the app has no sandbox of its own to prove).
    isolation: Mapping[str, tuple[str, ...]] | None
    require_clean_worktree: bool
    max_statement_bytes: int
    max_candidate_bytes: int
    policy_sha256: str
    artifact_name: str
    # The app contract (docs/app-contract.md): the policy's commands, installers, checks, displays, codes.
    install: Mapping[str, InstallTarget]
    build_command: tuple[str, ...]
    probe_command: tuple[str, ...]
    journey_command: tuple[str, ...]
    probe_checks: tuple[str, ...]
    displays: Mapping[str, DisplayKind]
    code_pattern: str
    # None: the policy asks for no update journey (and a statement carrying one is refused).
    update: UpdateExpectations | None = None

    @property
    def mode(self) -> Literal["local", "github"]:
        """The evidence mode this policy's trust mode implies."""
        return "local" if self.trust_mode == "ed25519" else "github"

    @property
    def required_steps(self) -> tuple[str, ...]:
        return tuple(self.steps)

    def layers_for(self, platform: str) -> tuple[str, ...] | None:
        return None if self.isolation is None else self.isolation[platform]

    def display_for(self, platform: str) -> DisplayKind:
        return self.displays.get(platform, "none")

    @classmethod
    def from_policy(cls, policy: Policy) -> Expectations:
        f = policy.file
        app, iso = f.app, f.isolation
        platforms: tuple[Platform, ...] = ("linux", "macos", "windows")
        return cls(
            trust_mode=f.trust.mode,
            repository=f.producer.repository,
            workflow=f.producer.workflow,
            ref=f.producer.ref,
            allowed_triggers=frozenset(f.producer.allowed_triggers),
            runner_environment=f.producer.runner_environment,
            required_platforms=policy.required_platforms,
            steps=MappingProxyType(dict(f.journey.steps)),
            accepted_signing=MappingProxyType({"linux": frozenset(f.signing.linux),
                                               "macos": frozenset(f.signing.macos),
                                               "windows": frozenset(f.signing.windows)}),
            isolation=None if iso is None else MappingProxyType(
                {"linux": tuple(iso.linux), "macos": tuple(iso.macos), "windows": tuple(iso.windows)}),
            require_clean_worktree=f.source.require_clean_worktree,
            max_statement_bytes=f.limits.max_statement_bytes,
            max_candidate_bytes=f.limits.max_candidate_bytes,
            policy_sha256=policy.sha256,
            artifact_name=app.name,
            install=MappingProxyType({p: t for p in platforms if (t := app.install.get(p)) is not None}),
            build_command=tuple(app.build.argv),
            probe_command=tuple(app.probe.argv),
            journey_command=tuple(app.journey.argv),
            probe_checks=tuple(app.probe.require),
            displays=MappingProxyType({p: app.display.kind(p) for p in platforms}),
            code_pattern=app.codes.pattern,
            update=None if f.update is None or app.state is None else UpdateExpectations(
                state_write=tuple(app.state.write), state_check=tuple(app.state.check),
                downgrade="allow" if f.update.downgrade == "allow" else "refuse",
                downgrade_code=f.update.downgrade_code),
        )
