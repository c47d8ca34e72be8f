"""Environment broker: logical keys granted per tier, skill and authority, never ``os.environ``.

The host decides which logical keys a skill may read under which authority and
what their values are (docs/design.md §9.4: logical keys only). A handler can
name a key; it can never name a host environment variable. Values are bounded
one by one and as a snapshot, and the audit records the key name only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from skillhost._errors import SkillError

KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
MAX_VALUE = 4096
MAX_SNAPSHOT = 16 * 1024
MAX_KEYS = 32


def _checked(values: Mapping[str, str]) -> dict[str, str]:
    if len(values) > MAX_KEYS:
        raise SkillError("CC_SKILL_ENV_GRANT_INVALID", f"more than {MAX_KEYS} logical keys")
    out, total = {}, 0
    for key, value in values.items():
        if not isinstance(key, str) or not KEY_RE.match(key):
            raise SkillError("CC_SKILL_ENV_GRANT_INVALID", "logical key names are short identifiers")
        if not isinstance(value, str) or len(value) > MAX_VALUE:
            raise SkillError("CC_SKILL_ENV_GRANT_INVALID", f"{key}: value must be a string of at most {MAX_VALUE}")
        total += len(value)
        out[key] = value
    if total > MAX_SNAPSHOT:
        raise SkillError("CC_SKILL_ENV_GRANT_INVALID", "granted values exceed the snapshot cap")
    return out


class EnvironmentPort:
    """``env.get(key)`` and ``env.keys()`` over the grants of one skill under one authority."""

    methods = ("get", "keys")

    def __init__(self, grants: Mapping[str, str], withheld: frozenset[str] = frozenset()) -> None:
        self._values = _checked(grants)
        # Keys granted to the skill but not under the current authority: refused with a code of their own.
        self._withheld = withheld

    def get(self, key: object = "") -> str:
        if isinstance(key, str) and key in self._withheld:
            raise SkillError("CC_SKILL_AUTHORITY_DENIED", "logical key not granted under this authority")
        if not isinstance(key, str) or key not in self._values:
            raise SkillError("CC_SKILL_ENV_KEY_DENIED", "logical key not granted to this skill")
        return self._values[key]

    def keys(self) -> list[str]:
        return sorted(self._values)

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        key = args[0] if args else kwargs.get("key", "")
        # Only a well-formed logical key name is echoed; anything else could be a smuggled value.
        return key if isinstance(key, str) and KEY_RE.match(key) else "?"


TIERS = ("bundled", "external")
# Grants as the host writes them: skill id -> authority -> {logical key: value}.
GrantTable = Mapping[str, Mapping[str, Mapping[str, str]]]


class EnvGrants:
    """tier -> skill id -> authority -> {logical key: value}. A missing entry grants nothing.

    Keyed by tier as well as id: an external package that names itself after a
    bundled skill must never receive that skill's grants.
    """

    def __init__(self, grants: GrantTable | None = None, *, external: GrantTable | None = None) -> None:
        self._grants = {
            tier: {s: {a: _checked(v) for a, v in by_auth.items()} for s, by_auth in (table or {}).items()}
            for tier, table in zip(TIERS, (grants, external), strict=True)
        }

    def port_for(
        self, skill_id: str, authority: str, *, tier: str, grants_key: Callable[[str], bool] | None = None
    ) -> EnvironmentPort:
        """The port over this skill's keys under ``authority``; ``grants_key`` narrows them to the authority's keys."""
        if tier not in self._grants:
            raise SkillError("CC_SKILL_ENV_GRANT_INVALID", f"unknown trust tier {tier[:20]!r}")
        values = self._grants[tier].get(skill_id, {}).get(authority, {})
        if grants_key is None:
            return EnvironmentPort(values)
        kept = {k: v for k, v in values.items() if grants_key(k)}
        return EnvironmentPort(kept, frozenset(values) - frozenset(kept))
