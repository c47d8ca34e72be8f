"""Loopback service broker: a named local service (a model server) on 127.0.0.1, separate from public egress.

Public egress refuses every loopback address (``_egress``); a skill reaches a
local service only through this port, by the service's name, on one of the
ports the host lists for that service. It speaks plain HTTP/1.1 GET to
127.0.0.1 only (no name resolution, no redirects followed), with its own time
and byte caps. The audit names the service, never the path.
"""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from skillhost._errors import SkillError

SERVICE_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_PATH_RE = re.compile(r"^/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]{0,511}$")
MAX_BYTES = 64 * 1024
TIMEOUT = 5.0
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class LoopbackServices:
    """The host's loopback services: name -> the fixed ports it may be reached on.

    ``skills`` binds each service to the skill ids that may reach it (a service bound to none is reached by
    none); the authority's own list of service names narrows it further (``for_skill``).
    """

    services: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    max_bytes: int = MAX_BYTES
    timeout: float = TIMEOUT
    skills: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def for_skill(self, skill_id: str, grants: Callable[[str], bool]) -> tuple[LoopbackServices, frozenset[str]]:
        """The services this skill is bound to and the authority grants, and those it withholds."""
        bound = {name: ports for name, ports in self.services.items() if skill_id in self.skills.get(name, ())}
        kept = {name: ports for name, ports in bound.items() if grants(name)}
        return replace(self, services=kept), frozenset(bound) - frozenset(kept)

    def __post_init__(self) -> None:
        for name, ports in self.services.items():
            if not SERVICE_RE.match(name) or not ports or not all(0 < p < 65536 for p in ports):
                raise SkillError("CC_SKILL_LOOPBACK_POLICY_INVALID", f"service {name[:32]!r}: a name and its ports")


class LoopbackPort:
    """``loopback.get(service, path="/", port=None)`` -> ``{"status", "content_type", "body"}``."""

    methods = ("get",)

    def __init__(self, policy: LoopbackServices, withheld: frozenset[str] = frozenset()) -> None:
        self._policy = policy
        # Services bound to the skill but not granted under the current authority: refused with a code of their own.
        self._withheld = withheld

    def _port(self, service: object, port: object) -> int:
        if isinstance(service, str) and service in self._withheld:
            raise SkillError("CC_SKILL_AUTHORITY_DENIED", "loopback service not granted under this authority")
        if not isinstance(service, str) or service not in self._policy.services:
            raise SkillError("CC_SKILL_LOOPBACK_SERVICE_UNKNOWN", "not a loopback service of this host")
        allowed = self._policy.services[service]
        if port is None:
            return allowed[0]
        if not isinstance(port, int) or isinstance(port, bool) or port not in allowed:
            raise SkillError("CC_SKILL_LOOPBACK_PORT_DENIED", f"{service} is not served on that port")
        return port

    def get(self, service: object = "", path: object = "/", port: object = None) -> dict[str, Any]:
        number = self._port(service, port)
        if not isinstance(path, str) or not _PATH_RE.match(path):
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", "path must be an absolute, ASCII, percent-encoded path")
        deadline = time.monotonic() + self._policy.timeout

        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SkillError("CC_SKILL_LOOPBACK_TIMEOUT", "request exceeded its time budget")
            return left

        conn = http.client.HTTPConnection(LOOPBACK, number, timeout=remaining())
        try:
            conn.request("GET", path, headers={"Accept-Encoding": "identity", "Connection": "close"})
            resp = conn.getresponse()
            chunks, total = [], 0
            while True:
                if conn.sock is not None:
                    conn.sock.settimeout(remaining())
                block = resp.read(4096)
                if not block:
                    break
                total += len(block)
                if total > self._policy.max_bytes:
                    raise SkillError("CC_SKILL_LOOPBACK_TOO_LARGE", f"response exceeds {self._policy.max_bytes} bytes")
                chunks.append(block)
            ctype = resp.getheader("Content-Type") or ""
            body = b"".join(chunks).decode("utf-8", "replace")
            return {"status": resp.status, "content_type": ctype[:100], "body": body}
        except TimeoutError:
            raise SkillError("CC_SKILL_LOOPBACK_TIMEOUT", "loopback service timed out") from None
        except (OSError, http.client.HTTPException) as exc:
            raise SkillError("CC_SKILL_LOOPBACK_FAILED", f"loopback request failed: {exc.__class__.__name__}") from None
        finally:
            conn.close()

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        service = args[0] if args else kwargs.get("service", "")
        return service if isinstance(service, str) and SERVICE_RE.match(service) else "?"
