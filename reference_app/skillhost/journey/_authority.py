"""Journey steps for the authority term of the intersection: declared and catalogued is not granted.

Each refusal runs a call whose capability the skill declares and its catalog
entry (bundled) or signed manifest (external) holds, under an authority that
does not grant it, and must be refused with ``CC_SKILL_AUTHORITY_DENIED``. The
same step then runs the same call under the journey's granting authority and
passes only if that one runs: the authority, and nothing else, made the
difference.

The run-time domain steps take the journey's TLS server off the static egress
allow-list: it is reachable only through a declassification decision for the
calling skill under the current authority, whose id the audit then carries.
The redirect step reaches the server's second name (``DECIDED_NAME``, never
allow-listed) through a redirect from its first: the end record names the
decision that let the last hop through.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from skillhost._errors import SkillError
from skillhost.brokers import Declassification
from skillhost.host import AUTHORITY_DENIED, Authority, SkillHost
from skillhost.journey._loopback_tls import DECIDED_NAME
from skillhost.journey._on_host import _bundled_refusal
from skillhost.journey._step import Step, _step
from skillhost.packaging import KNOWN_CAPABILITIES

GRANTING = "journey"
# Reads and logs only: no process, no network, no files.
REVIEWER = "reviewer"
# Processes, but only the ``git --version`` rule.
VERSION_ONLY = "version-only"
# Every capability, but no egress destination: the destinations the host lists are withheld.
NO_DESTINATIONS = "no-destinations"
# Every capability, but no environment key.
NO_ENV_KEYS = "no-env-keys"
UNLISTED = "unlisted"

JOURNEY_AUTHORITIES: Mapping[str, Authority] = {
    GRANTING: Authority.everything(GRANTING),
    REVIEWER: Authority(REVIEWER, frozenset({"runtime:time", "host:logger", "environment:read"})),
    VERSION_ONLY: Authority(VERSION_ONLY, KNOWN_CAPABILITIES, process_rules=frozenset({"git-version"})),
    NO_DESTINATIONS: Authority(NO_DESTINATIONS, KNOWN_CAPABILITIES, egress=frozenset()),
    NO_ENV_KEYS: Authority(NO_ENV_KEYS, KNOWN_CAPABILITIES, env_keys=frozenset()),
}
# Each withheld capability's port, which the host must not even build under an authority withholding it.
_PORT_OF = {"repo-status": ("process", "process:exec"), "fetch-status": ("https", "network:https"),
            "read-notes": ("fs", "filesystem:read"), "host-info": ("env", "environment:read")}


def under(host: SkillHost, authority: str) -> SkillHost:
    """The same host configuration under another authority name."""
    return SkillHost(replace(host.config, authority=authority), host.pkg_dir)


def _bundled_pair(host: SkillHost, sid: str, authority: str, skill: str, args: dict[str, Any]) -> Step:
    narrowed = under(host, authority)
    try:
        value, _ = narrowed.run_bundled(skill, args)
    except SkillError as exc:
        observed, code, refused = "reject", exc.code, exc.message
    else:
        return _step(sid, "reject", AUTHORITY_DENIED, "allow", None, f"ran under {authority}: {str(value)[:120]}")
    port, capability = _PORT_OF[skill]
    if capability not in narrowed.authority.capabilities:
        # Withheld as a capability: the port must not exist for the run at all (only approved ports are built).
        built = narrowed.ports_for(skill, tier="bundled", capabilities=(capability,))
        if port in built:
            return _step(sid, "reject", AUTHORITY_DENIED, observed, code, f"{port} port built under {authority}", False)
    try:
        under(host, GRANTING).run_bundled(skill, args)
        granted = "ran"
    except SkillError as exc:
        granted = f"refused {exc.code}"
    detail = f"under {authority}: {refused}; the same call under {GRANTING}: {granted}"
    return _step(sid, "reject", AUTHORITY_DENIED, observed, code, detail, granted == "ran")


def _external_pair(host: SkillHost, sid: str, skill_dir: Path) -> Step:
    """An external skill under an authority the host does not know: every port is withheld."""
    try:
        out = under(host, UNLISTED).run_external(skill_dir)
    except SkillError as exc:
        return _step(sid, "reject", AUTHORITY_DENIED, "reject", exc.code, f"refused before any worker: {exc.message}")
    if out.ok:
        return _step(sid, "reject", AUTHORITY_DENIED, "allow", None, f"ran under {UNLISTED}: {out.value}")
    denied = [a for a in out.audit if a["event"] == "denied"]
    # Each refusal names the authority and what was asked for (a pre-check refusal too: a target, never empty).
    names_authority = bool(denied) and all(a["authority"] == UNLISTED and a["target"] for a in denied)
    granted = under(host, GRANTING).run_external(skill_dir)
    detail = (
        f"worker_pid={out.worker_pid} reaped={out.reaped} audit names {UNLISTED}: {names_authority}; "
        f"the same skill under {GRANTING}: {'ran' if granted.ok else granted.code}"
    )
    ok = names_authority and out.reaped and granted.ok
    return _step(sid, "reject", AUTHORITY_DENIED, "reject", out.code, detail, ok)


def authority_steps(host: SkillHost, base_url: str, build_external: Callable[[], Path]) -> list[Step]:
    """``host`` runs under the granting authority; its configuration is reused under the others."""
    fetch = {"url": f"{base_url}/redirect-in"}
    rows: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
        ("authority-withholds-process-rejected", REVIEWER, "repo-status", {}),
        ("authority-withholds-egress-rejected", REVIEWER, "fetch-status", fetch),
        # The capability granted, the destination list narrowed to none: the list is a term of the permission.
        ("authority-narrows-egress-rejected", NO_DESTINATIONS, "fetch-status", fetch),
        # The capability granted, the environment keys narrowed to none.
        ("authority-narrows-env-keys-rejected", NO_ENV_KEYS, "host-info", {}),
        ("authority-withholds-fs-read-rejected", REVIEWER, "read-notes", {"path": "notes.txt"}),
        ("authority-withholds-process-rule-rejected", VERSION_ONLY, "repo-status", {}),
    )
    steps = [_bundled_pair(host, sid, authority, skill, args) for sid, authority, skill, args in rows]
    steps.append(_external_pair(host, "authority-unknown-external-rejected", build_external()))
    return steps


def _decided_host(host: SkillHost, server: str, port: int, decision: Declassification) -> SkillHost:
    """``host`` with ``server`` off the static allow-list, reachable only through ``decision``."""
    egress = host.config.egress
    static = frozenset(d for d in egress.allowed if d != (server, port))
    return SkillHost(replace(host.config, egress=replace(egress, allowed=static, decisions=(decision,))), host.pkg_dir)


def runtime_domain_steps(host: SkillHost, server: str, port: int) -> list[Step]:
    """A destination known only at run time: allowed with a live decision for this skill and authority only."""
    now = time.time()

    def decision(
        decision_id: str, skill: str, expires_in: float, authority: str = GRANTING
    ) -> Declassification:
        return Declassification(decision_id, "journey-reviewer", skill, authority, server, port, now + expires_in)

    url = {"url": f"https://{server}:{port}/hello"}
    steps: list[Step] = []
    sid = "runtime-domain-decided-runs"
    try:
        value, broker = _decided_host(host, server, port, decision("d-journey-1", "fetch-status", 300)).run_bundled(
            "fetch-status", url
        )
    except SkillError as exc:
        steps.append(_step(sid, "allow", None, "reject", exc.code, exc.message))
    else:
        targets = [a["target"] for a in broker.audit if a["port"] == "https"]
        audited = targets == [f"d-journey-1@{server}"] * 2
        detail = f"value={value} audit targets={targets[:2]}"
        steps.append(_step(sid, "allow", None, "allow", None, detail, audited and value.get("status") == 200))
    for sid, code, taken in (
        # Decided, but for another skill: this one may not use it.
        ("runtime-domain-undecided-rejected", "CC_SKILL_EGRESS_HOST_DENIED",
         decision("d-journey-2", "read-notes", 300)),
        ("runtime-domain-expired-decision-rejected", "CC_SKILL_EGRESS_DECISION_EXPIRED",
         decision("d-journey-3", "fetch-status", -1)),
        # Decided for this skill, but under another authority: a decision is bound to the authority it was taken for.
        ("runtime-domain-other-authority-rejected", "CC_SKILL_EGRESS_HOST_DENIED",
         decision("d-journey-4", "fetch-status", 300, NO_DESTINATIONS)),
    ):
        steps.append(_bundled_refusal(_decided_host(host, server, port, taken), sid, "fetch-status", url, code))
    # The redirect's target is another name of the same server, reachable only through this decision.
    redirect = Declassification("d-journey-5", "journey-reviewer", "fetch-status", GRANTING, DECIDED_NAME, port,
                                now + 300)
    steps.append(_redirect_decided_step(host, server, port, redirect))
    return steps


def _redirect_decided_step(host: SkillHost, server: str, port: int, taken: Declassification) -> Step:
    """An allow-listed page redirects to a destination reachable only through ``taken``: the call runs, and its
    end record names the decision that let the redirect through (the hop it ended on), not the first host."""
    sid = "runtime-domain-redirect-decided-runs"
    decided = SkillHost(replace(host.config, egress=replace(host.config.egress, decisions=(taken,))), host.pkg_dir)
    url = {"url": f"https://{server}:{port}/redirect-decided"}
    try:
        value, broker = decided.run_bundled("fetch-status", url)
    except SkillError as exc:
        return _step(sid, "allow", None, "reject", exc.code, exc.message)
    ends = [a["target"] for a in broker.audit if a["port"] == "https" and a["event"] == "done"]
    named = ends == [f"{taken.decision_id}@{taken.host}"]
    # The control: the same call without the decision is refused at the redirect.
    without = _bundled_refusal(host, sid, "fetch-status", url, "CC_SKILL_EGRESS_REDIRECT_DENIED")
    detail = f"value={value} end targets={ends[:2]}; without the decision: {without['observed_code']}"
    ok = named and value.get("redirects") == 1 and value.get("status") == 200 and without["passed"]
    return _step(sid, "allow", None, "allow", None, detail, ok)
