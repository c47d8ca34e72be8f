"""The host API: which ports a skill gets, trust tiers, and safe mode.

One ``SkillHost`` per session. It builds the broker ports for each run from its
own configuration (scoped root, process allow-list, egress policy, environment
grants) narrowed to what the session's authority grants (``_authority``), and
decides the tier: bundled skills run in this process after the
catalog check, external skills only after package validation and signature
verification and only in a one-shot worker, prompt-only skills never run.
Safe mode (docs/design.md §9.5) is decided before anything of a
third-party skill is read: bundled skills keep working.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillhost._errors import SkillError
from skillhost._runtime import package_dir, platform_name
from skillhost._version import __version__
from skillhost.brokers import (
    AuditEvent,
    Broker,
    Connector,
    Diagnostics,
    EgressPolicy,
    EnvGrants,
    FilesystemPort,
    HttpsPort,
    LoggerPort,
    LoopbackPort,
    LoopbackServices,
    ProcessPort,
    ProcessRule,
    Resolver,
    TimePort,
    entry_id,
    git_rules,
    system_resolver,
)
from skillhost.host._authority import Authority, lookup
from skillhost.host._bundled import run_bundled
from skillhost.host._runner import MAX_DURATION, Outcome, run_external
from skillhost.packaging import (
    PORT_CAPABILITY,
    SKILL_ID_RE,
    TrustStore,
    discover,
    list_bundled,
    verify_catalog,
    verify_for_execution,
)

EXTERNAL_DIR = "skills"
# The process rule name an authority grants to let skills run the network diagnostics.
DIAGNOSTICS_RULE = "network-diagnostics"


def default_env_grants(authority: str) -> EnvGrants:
    """Host-derived, non-secret logical keys; the *bundled* ``host-info`` skill may read ``host-platform``."""
    return EnvGrants({"host-info": {authority: {"host-platform": platform_name(), "app-version": __version__}}})


@dataclass
class HostConfig:
    workspace: Path
    trust: TrustStore
    safe_mode: bool = False
    authority: str = "cli"
    process_rules: tuple[ProcessRule, ...] | None = None
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    resolver: Resolver = system_resolver
    connect: Connector = socket.create_connection
    loopback: LoopbackServices = field(default_factory=LoopbackServices)
    ssl_context: ssl.SSLContext | None = None
    env_grants: EnvGrants | None = None
    # Authorities by name; ``authority`` is looked up here, and a name not in the table grants nothing.
    authorities: Mapping[str, Authority] = field(default_factory=lambda: {"cli": Authority.everything("cli")})
    # The skills that may run the network diagnostics (bound like a process rule), and the absolute executable
    # the host chose for a tool where it does not take the platform's one from PATH.
    diagnostic_skills: frozenset[str] = frozenset()
    diagnostic_executables: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RunResult:
    skill_id: str
    tier: str
    value: Any
    audit: list[AuditEvent]
    worker_pid: int | None = None


class SkillHost:
    def __init__(self, config: HostConfig, pkg_dir: Path | None = None) -> None:
        self.config = config
        self.pkg_dir = package_dir() if pkg_dir is None else Path(pkg_dir)
        self.workspace = Path(os.path.realpath(config.workspace))
        if not self.workspace.is_dir():
            raise SkillError("CC_SKILL_USAGE", "workspace is not a directory")
        self.env_grants = config.env_grants or default_env_grants(config.authority)
        self.logs: list[dict[str, str]] = []
        # Bundled skill id -> its entry as the catalog verified it, read once per host (the git rules' binding).
        self._catalog: dict[str, str] | None = None

    @property
    def authority(self) -> Authority:
        return lookup(self.config.authorities, self.config.authority)

    def bundled_entry(self, skill_id: str) -> str | None:
        """The entry the verified catalog records for a bundled skill (``entry_id``); ``None`` if it has none."""
        if self._catalog is None:
            verified = verify_catalog(self.pkg_dir)
            self._catalog = {k: entry_id("bundled", k, v["handler_sha256"]) for k, v in verified.items()}
        return self._catalog.get(skill_id)

    def ports_for(
        self, skill_id: str, *, tier: str, capabilities: Iterable[str], entry: str = ""
    ) -> dict[str, Any]:
        """Fresh port objects for one run: only the ports whose capability the skill may use (declared ∩ catalog
        or signed manifest, ``capabilities``) and the authority grants, each narrowed to the authority's rules,
        destinations, keys and services and bound to the skill (and ``entry``, the entry its check verified).

        The broker checks the same intersection again (``granted``); a port that was never built cannot run.
        """
        cfg, auth = self.config, self.authority
        wanted = frozenset(capabilities) & auth.capabilities
        rules = git_rules(self.bundled_entry("repo-status")) if cfg.process_rules is None else cfg.process_rules
        granted_rules = tuple(r for r in rules if auth.grants_rule(r.name))
        withheld_rules = tuple(r for r in rules if not auth.grants_rule(r.name))
        allowed = frozenset(d for d in cfg.egress.allowed if auth.grants_destination(*d))
        # Run-time destinations: only the decisions taken for this skill under this authority.
        decisions = tuple(d for d in cfg.egress.decisions if (d.skill_id, d.authority) == (skill_id, cfg.authority))
        egress = replace(cfg.egress, allowed=allowed, withheld=cfg.egress.allowed - allowed, decisions=decisions)
        https = HttpsPort(egress, cfg.resolver, cfg.ssl_context, cfg.connect)
        # Diagnostics: only for the skills the host binds them to, only if the authority grants the rule, and
        # only to what this run's egress may reach (named in the audit as that egress names it).
        bound = skill_id in cfg.diagnostic_skills
        diagnose = bound and auth.grants_rule(DIAGNOSTICS_RULE)
        diagnostics = (
            Diagnostics(https.check_destination, label=https.label, executables=cfg.diagnostic_executables)
            if diagnose
            else None
        )
        services, withheld_services = cfg.loopback.for_skill(skill_id, auth.grants_service)
        builders: dict[str, Callable[[], Any]] = {
            "time": TimePort,
            "logger": lambda: LoggerPort(self.logs),
            "env": lambda: self.env_grants.port_for(skill_id, cfg.authority, tier=tier, grants_key=auth.grants_key),
            "fs": lambda: FilesystemPort(self.workspace),
            "process": lambda: ProcessPort(
                self.workspace,
                granted_rules,
                withheld=withheld_rules,
                skill_id=skill_id,
                entry=entry,
                diagnostics=diagnostics,
                diagnostics_withheld=bound and not diagnose,
            ),
            "https": lambda: https,
            "loopback": lambda: LoopbackPort(services, withheld_services),
        }
        return {port: build() for port, build in builders.items() if PORT_CAPABILITY[port] in wanted}

    def run_bundled(self, skill_id: str, args: dict[str, Any] | None = None) -> tuple[Any, Broker]:
        return run_bundled(
            self.pkg_dir,
            skill_id,
            args,
            self.logs,
            ports=lambda caps, entry: self.ports_for(skill_id, tier="bundled", capabilities=caps, entry=entry),
            authority=self.config.authority,
            granted=self.authority.capabilities,
        )

    def external_dir(self, skill_id: str) -> Path:
        if not isinstance(skill_id, str) or not SKILL_ID_RE.match(skill_id):
            raise SkillError("CC_SKILL_USAGE", "skill id must match ^[a-z0-9][a-z0-9-]{0,63}$")
        return self.workspace / EXTERNAL_DIR / skill_id

    def run_external(
        self,
        skill_dir: Path,
        args: dict[str, Any] | None = None,
        *,
        cancel: threading.Event | None = None,
        max_duration: float = MAX_DURATION,
        protocol_version: int | None = None,
    ) -> Outcome:
        # Safe mode is decided first: not even discovery reads a third-party package.
        if self.config.safe_mode:
            raise SkillError("CC_SKILL_SAFE_MODE", "safe mode: third-party skills are not loaded")
        candidate = discover(skill_dir)
        verified = verify_for_execution(candidate, self.config.trust)
        if verified.skill_id in list_bundled(self.pkg_dir):
            # Bundled ids are reserved: an external package may not borrow one's name, grants or audit identity.
            raise SkillError("CC_SKILL_PACKAGE_INVALID", f"external skill claims the bundled id {verified.skill_id!r}")
        extra: dict[str, Any] = {} if protocol_version is None else {"protocol_version": protocol_version}
        return run_external(
            verified,
            self.ports_for(
                verified.skill_id,
                tier="external",
                capabilities=verified.capabilities,
                entry=entry_id("external", verified.skill_id, verified.handler_sha256),
            ),
            args,
            max_duration,
            cancel=cancel,
            authority=self.config.authority,
            granted=self.authority.capabilities,
            **extra,
        )

    def run(self, skill_id: str, args: dict[str, Any] | None = None) -> RunResult:
        """Bundled ids win: an external package can never shadow a bundled skill."""
        if skill_id in list_bundled(self.pkg_dir):
            value, broker = self.run_bundled(skill_id, args)
            return RunResult(skill_id, "bundled", value, broker.audit)
        skill_dir = self.external_dir(skill_id)
        if not self.config.safe_mode and not os.path.lexists(skill_dir):
            raise SkillError("CC_SKILL_NOT_FOUND", f"no bundled or workspace skill {skill_id!r}")
        # requested id == folder name here, and verify_for_execution requires folder name == manifest id.
        out = self.run_external(skill_dir, args)
        if not out.ok:
            raise SkillError(out.code or "CC_SKILL_HANDLER_FAILED", out.message)
        return RunResult(skill_id, "external", out.value, out.audit, out.worker_pid)
