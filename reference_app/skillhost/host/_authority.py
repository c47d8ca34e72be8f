"""Session and task authorities: the third term of a call's permission.

What a call may do = declared ∩ catalog (bundled) or signed manifest (external)
∩ **authority** ∩ broker policy. An authority names the capabilities (ports) it
grants and, within them, the process rules, egress destinations,
environment keys and loopback services; ``None`` for one of those means "whatever the host's own
policy for that port offers". The host looks the current authority up by name
in its table; a name the table does not hold grants nothing. What the host's
policy offers but the authority withholds is refused with
``CC_SKILL_AUTHORITY_DENIED``, a code of its own, so an audit tells "not
granted under this authority" from "not allowed at all".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from skillhost._errors import SkillError
from skillhost.packaging import KNOWN_CAPABILITIES

AUTHORITY_DENIED = "CC_SKILL_AUTHORITY_DENIED"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


@dataclass(frozen=True)
class Authority:
    """One authority's grants; ``None`` for a port's list grants what the host's policy for that port offers."""

    name: str
    capabilities: frozenset[str]
    process_rules: frozenset[str] | None = None
    egress: frozenset[tuple[str, int]] | None = None
    env_keys: frozenset[str] | None = None
    loopback_services: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise SkillError("CC_SKILL_USAGE", "an authority name must match ^[a-z0-9][a-z0-9-]{0,63}$")
        unknown = sorted(self.capabilities - KNOWN_CAPABILITIES)
        if unknown:
            raise SkillError("CC_SKILL_CAPABILITY_UNKNOWN", f"authority {self.name} grants unknown {unknown[0][:40]!r}")

    @classmethod
    def everything(cls, name: str) -> Authority:
        """Every capability, and within each whatever the host's policy offers (the command line's default)."""
        return cls(name, KNOWN_CAPABILITIES)

    def grants_rule(self, rule_name: str) -> bool:
        return self.process_rules is None or rule_name in self.process_rules

    def grants_destination(self, host: str, port: int) -> bool:
        return self.egress is None or (host, port) in self.egress

    def grants_key(self, key: str) -> bool:
        return self.env_keys is None or key in self.env_keys

    def grants_service(self, service: str) -> bool:
        return self.loopback_services is None or service in self.loopback_services


# An authority that grants nothing: what an unknown authority name gets.
def nothing(name: str) -> Authority:
    return Authority(name if NAME_RE.match(name) else "unknown", frozenset())


def lookup(table: Mapping[str, Authority], name: str) -> Authority:
    found = table.get(name)
    return found if found is not None and found.name == name else nothing(name)
