"""Network broker: HTTPS GET to allow-listed names, pinned to a checked address.

Order of checks for every hop (the first request and each redirect alike):

1. the URL is ``https``, has no user info, and its host is a DNS name, not an
   IP literal (also not the numeric forms ``getaddrinfo`` would accept);
2. ``(host, port)`` is on the policy's allow-list (exact names, no wildcards),
   or, for a destination known only at run time, a declassification decision
   for this skill under this authority names it and has not expired (its id is
   then part of the call's audit target, ``<decision-id>@<host>``);
3. the injectable resolver's answers are all public unicast addresses (private,
   loopback, link-local, multicast, reserved or a mix with any of them is a
   refusal, with no exemption: a loopback service is the loopback broker's,
   ``_loopback``);
4. the socket connects to the checked address (through the injectable
   ``connect``, by default ``socket.create_connection``), TLS uses the *name* for SNI and
   certificate verification, and ``Host`` carries the name;
5. response bytes and total time are bounded; a redirect starts again at 1.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from skillhost._errors import SkillError

Resolver = Callable[[str, int], Sequence[str]]
# Opens a TCP connection to (checked address, port) within a timeout.
Connector = Callable[[tuple[str, int], float], socket.socket]
MAX_URL = 2048
MAX_BYTES = 64 * 1024
TIMEOUT = 5.0
MAX_REDIRECTS = 3
MAX_TARGET = 64
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+))*$")
_URL_FORBIDDEN = re.compile(r"[\x00-\x20\x7f]")
_REDIRECTS = {301, 302, 303, 307, 308}


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})


def _valid_name(host: str) -> bool:
    return 0 < len(host) <= 253 and "." in host and all(_LABEL.match(p) for p in host.split("."))


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return bool(_NUMERIC_HOST.match(host))
    return True


DECISION_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")


@dataclass(frozen=True)
class Declassification:
    """A recorded decision that a run-time destination may be reached: who decided, for whom, until when."""

    decision_id: str
    decided_by: str
    skill_id: str
    authority: str
    host: str
    port: int
    expires_at: float  # seconds since the epoch

    def __post_init__(self) -> None:
        if not DECISION_ID_RE.match(self.decision_id) or not self.decided_by or len(self.decided_by) > 64:
            raise SkillError("CC_SKILL_EGRESS_POLICY_INVALID", "a decision needs a short id and who decided")
        if is_ip_literal(self.host) or not _valid_name(self.host) or not 0 < self.port < 65536:
            raise SkillError("CC_SKILL_EGRESS_POLICY_INVALID", f"not an exact DNS name and port: {self.host[:60]!r}")


@dataclass(frozen=True)
class EgressPolicy:
    allowed: frozenset[tuple[str, int]] = frozenset()
    max_bytes: int = MAX_BYTES
    timeout: float = TIMEOUT
    max_redirects: int = MAX_REDIRECTS
    user_agent: str = field(default="skillhost/0.1")
    # Destinations the host's policy allows but the current authority does not grant.
    withheld: frozenset[tuple[str, int]] = frozenset()
    # Run-time destinations; the host passes each port only the decisions for its skill and authority.
    decisions: tuple[Declassification, ...] = ()

    def __post_init__(self) -> None:
        for host, port in self.allowed:
            if "*" in host or is_ip_literal(host) or not _valid_name(host) or not 0 < port < 65536:
                raise SkillError("CC_SKILL_EGRESS_POLICY_INVALID", f"not an exact DNS name and port: {host[:60]!r}")


@dataclass(frozen=True)
class _Target:
    host: str
    port: int
    path: str


# NAT64 well-known prefix (RFC 6052): the last 32 bits are the IPv4 address that is really reached.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a v6 address carries and routes to: IPv4-mapped, 6to4 (2002::/16), NAT64, Teredo."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr in _NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    if addr.teredo is not None:
        return addr.teredo[1]
    return None


def _public(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local:
        # fec0::/10 is deprecated but still routed on some networks; never public.
        return False
    return addr.is_global and not addr.is_multicast and not addr.is_reserved


def _address_ok(raw: str) -> bool:
    try:
        addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(raw.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_ipv4(addr)
        if inner is not None and not _public(inner):
            return False
    return _public(addr)


class HttpsPort:
    """``https.get(url)`` -> ``{"status", "body", "content_type", "redirects"}``."""

    methods = ("get",)

    def __init__(
        self,
        policy: EgressPolicy,
        resolver: Resolver = system_resolver,
        ssl_context: ssl.SSLContext | None = None,
        connect: Connector = socket.create_connection,
    ) -> None:
        self._policy = policy
        self._resolve = resolver
        self._connect = connect
        self._ctx = ssl_context if ssl_context is not None else ssl.create_default_context()
        # The destination the last hop of this thread's call reached, for the call's end record.
        self._reached = threading.local()
        # Certificate and name checks are not optional, whatever context was injected.
        if self._ctx.verify_mode != ssl.CERT_REQUIRED or not self._ctx.check_hostname:
            raise SkillError("CC_SKILL_EGRESS_POLICY_INVALID", "TLS context must verify certificates and names")

    def _target(self, url: object) -> _Target:
        if not isinstance(url, str) or not url or len(url) > MAX_URL or _URL_FORBIDDEN.search(url):
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", "url must be a short string without spaces or controls")
        if not url.isascii():
            # IDNs must arrive as punycode and paths percent-encoded: the request line is ASCII.
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", "url must be ASCII (punycode host, percent-encoded path)")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", "url does not parse") from None
        if parts.scheme.lower() != "https":
            raise SkillError("CC_SKILL_EGRESS_SCHEME_DENIED", "only https is allowed")
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise SkillError("CC_SKILL_EGRESS_HOST_DENIED", "user info in the URL is refused")
        host = (parts.hostname or "").rstrip(".")
        if is_ip_literal(host):
            raise SkillError("CC_SKILL_EGRESS_IP_LITERAL", "IP literals are refused; use an allow-listed name")
        port = 443 if port is None else port
        if (host, port) not in self._policy.allowed and self._decision(host, port) is None:
            if (host, port) in self._policy.withheld:
                raise SkillError("CC_SKILL_AUTHORITY_DENIED", f"{host[:60]}:{port} is not granted to this authority")
            raise SkillError("CC_SKILL_EGRESS_HOST_DENIED", f"{host[:60]}:{port} is not on the allow-list")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return _Target(host, port, path)

    def _decision(self, host: str, port: int) -> Declassification | None:
        """The decision that lets this run reach a destination off the allow-list; an expired one is a refusal."""
        found = [d for d in self._policy.decisions if (d.host, d.port) == (host, port)]
        if found and all(d.expires_at <= time.time() for d in found):
            raise SkillError("CC_SKILL_EGRESS_DECISION_EXPIRED", f"the decision for {host[:60]} has expired")
        live = [d for d in found if d.expires_at > time.time()]
        return live[0] if live else None

    def label(self, host: str, port: int) -> str:
        """A destination as the audit names it: the host, after the id of the decision that allowed it if one did."""
        try:
            decision = self._decision(host, port)
        except SkillError:
            decision = None
        if decision is None or (host, port) in self._policy.allowed:
            return host[:MAX_TARGET]
        return f"{decision.decision_id}@{host}"[:MAX_TARGET]

    def final_target(self) -> str | None:
        """The audit target of the destination this thread's last call reached (its last hop); read once."""
        reached = getattr(self._reached, "label", None)
        self._reached.label = None
        return reached if isinstance(reached, str) else None

    def check_destination(self, host: str, port: int) -> str:
        """The address ``host:port`` may be reached at under this policy (allow-list or decision, public
        resolution), else the same refusal a request would get; used by the network diagnostics."""
        return self._address(self._target(f"https://{host}:{port}/"))

    def _address(self, target: _Target) -> str:
        answers = [a for a in self._resolve(target.host, target.port) if isinstance(a, str)][:32]
        if not answers:
            raise SkillError("CC_SKILL_EGRESS_DNS_FAILED", f"{target.host[:60]} did not resolve")
        bad = [a for a in answers if not _address_ok(a)]
        if bad:
            raise SkillError(
                "CC_SKILL_EGRESS_ADDRESS_DENIED",
                f"{target.host[:60]} resolved to a non-public address ({len(bad)} of {len(answers)})",
            )
        return sorted(answers)[0]

    def _fetch(self, target: _Target, address: str, deadline: float) -> tuple[int, str | None, str, bytes]:
        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SkillError("CC_SKILL_EGRESS_TIMEOUT", "request exceeded its time budget")
            return left

        host_header = target.host if target.port == 443 else f"{target.host}:{target.port}"
        request = (
            f"GET {target.path} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: {self._policy.user_agent}\r\n"
            "Accept: */*\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n"
        ).encode("ascii")
        try:
            raw = self._connect((address, target.port), remaining())
            with self._ctx.wrap_socket(raw, server_hostname=target.host) as tls:
                tls.settimeout(remaining())
                tls.sendall(request)
                resp = http.client.HTTPResponse(tls, method="GET")
                resp.begin()
                chunks, total = [], 0
                while True:
                    tls.settimeout(remaining())
                    block = resp.read(4096)
                    if not block:
                        break
                    total += len(block)
                    if total > self._policy.max_bytes:
                        raise SkillError(
                            "CC_SKILL_EGRESS_TOO_LARGE", f"response exceeds {self._policy.max_bytes} bytes"
                        )
                    chunks.append(block)
                return resp.status, resp.getheader("Location"), resp.getheader("Content-Type") or "", b"".join(chunks)
        except TimeoutError:
            raise SkillError("CC_SKILL_EGRESS_TIMEOUT", "network timeout") from None
        except ssl.SSLError as exc:
            raise SkillError("CC_SKILL_EGRESS_TLS_FAILED", f"TLS failed: {exc.__class__.__name__}") from None
        except (OSError, http.client.HTTPException, UnicodeError) as exc:
            raise SkillError("CC_SKILL_EGRESS_FAILED", f"request failed: {exc.__class__.__name__}") from None

    def get(self, url: object = "") -> dict[str, Any]:
        deadline = time.monotonic() + self._policy.timeout
        current = url
        self._reached.label = None
        for hop in range(self._policy.max_redirects + 1):
            try:
                target = self._target(current)
                # A hop reached through a decision is audited under that decision's id, the first or a redirect.
                self._reached.label = self.label(target.host, target.port)
                address = self._address(target)
            except SkillError as exc:
                if hop == 0:
                    raise
                # The same checks, re-run on the redirect target; report that it was a redirect.
                raise SkillError("CC_SKILL_EGRESS_REDIRECT_DENIED", f"redirect target refused: {exc.code}") from None
            status, location, ctype, body = self._fetch(target, address, deadline)
            if status in _REDIRECTS and location:
                current = urljoin(f"https://{target.host}:{target.port}{target.path}", location)
                continue
            return {
                "status": status,
                "content_type": ctype[:100],
                "body": body.decode("utf-8", "replace"),
                "redirects": hop,
            }
        raise SkillError("CC_SKILL_EGRESS_REDIRECT_DENIED", f"more than {self._policy.max_redirects} redirects")

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        url = args[0] if args else kwargs.get("url", "")
        try:
            host = urlsplit(url).hostname if isinstance(url, str) else None
        except ValueError:
            host = None
        if not host or not host.isascii():
            return "?"
        # The host name only (paths and queries may carry tokens), after the decision that allowed it, if one did.
        try:
            port = urlsplit(url).port or 443 if isinstance(url, str) else 443
        except ValueError:
            port = 443
        return self.label(host, port)
