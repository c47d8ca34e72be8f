"""What the policy expects, flattened for the checks (no policy I/O in here)."""

from __future__ import annotations

from dataclasses import dataclass

from evidence_schemas import Platform
from qualify_policy import Policy


@dataclass(frozen=True)
class Expectations:
    trust_mode: str
    repository: str
    workflow: str
    ref: str
    allowed_triggers: frozenset[str]
    runner_environment: str
    required_platforms: tuple[Platform, ...]
    required_steps: tuple[str, ...]
    accepted_signing: dict[str, frozenset[str]]
    require_clean_worktree: bool
    max_statement_bytes: int
    policy_sha256: str

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
            required_steps=tuple(f.journey.required_steps),
            accepted_signing={"linux": frozenset(f.signing.linux), "macos": frozenset(f.signing.macos),
                              "windows": frozenset(f.signing.windows)},
            require_clean_worktree=f.source.require_clean_worktree,
            max_statement_bytes=f.limits.max_statement_bytes,
            policy_sha256=policy.sha256,
        )
