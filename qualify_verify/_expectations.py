"""What the policy expects, flattened for the checks (no policy I/O in here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from desktop_qualify.evidence_schemas import Platform
from desktop_qualify.qualify_policy import Policy, StepExpectation


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
    # The sandbox layers each platform's worker must report as applied, in the policy's order.
    isolation: Mapping[str, tuple[str, ...]]
    require_clean_worktree: bool
    max_statement_bytes: int
    max_candidate_bytes: int
    policy_sha256: str
    artifact_name: str

    @property
    def mode(self) -> Literal["local", "github"]:
        """The evidence mode this policy's trust mode implies."""
        return "local" if self.trust_mode == "ed25519" else "github"

    @property
    def required_steps(self) -> tuple[str, ...]:
        return tuple(self.steps)

    @classmethod
    def from_policy(cls, policy: Policy) -> Expectations:
        f = policy.file
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
            isolation=MappingProxyType({"linux": tuple(f.isolation.linux), "macos": tuple(f.isolation.macos),
                                        "windows": tuple(f.isolation.windows)}),
            require_clean_worktree=f.source.require_clean_worktree,
            max_statement_bytes=f.limits.max_statement_bytes,
            max_candidate_bytes=f.limits.max_candidate_bytes,
            policy_sha256=policy.sha256,
            artifact_name=f.artifact.name,
        )
