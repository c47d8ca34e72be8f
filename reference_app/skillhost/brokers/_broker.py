"""Host ports and the capability broker.

What a call may do = declared ∩ catalog ∩ authority ∩ broker policy.
Every call is audited with bounded fields and no values: a call that passes the
pre-checks as ``start`` then ``done`` or ``denied``, a call a pre-check refuses
as one ``denied`` record, a call the run abandoned at its deadline as
``abandoned`` and, when it ends after all, ``late-done`` or ``late-denied``.
The audit is capped and never drops a record: once a call would not fit, the
broker stops (fail closed): that call and every later one is refused with
``CC_SKILL_AUDIT_FULL`` without running, and one last ``overflow`` record
counts them, so every refusal is in the audit, as a record or in that count.
Every record names the skill, the authority (or, in its target, the decision
id), the port, the method and a short non-secret target (a logical key name, a
host name, a rule or service name), never an argument value, an environment
value, argv or output.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol, TypedDict

from skillhost._errors import SkillError
from skillhost.packaging import PORT_CAPABILITY

MAX_REQUESTS = 32
MAX_LOG_MESSAGE = 200
MAX_AUDIT = 256
MAX_TARGET = 64
AUDIT_FULL = "CC_SKILL_AUDIT_FULL"
# Kept free at the end of the audit: the overflow record and the late end of one abandoned call.
_RESERVED = 2


class AuditEvent(TypedDict):
    """One audit record: bounded names only, never an argument, environment value or output."""

    seq: int
    event: str
    exec_id: str
    skill_id: str
    authority: str
    port: str
    method: str
    capability: str | None
    target: str
    code: str | None


class Port(Protocol):
    """A host port: a fixed tuple of callable method names plus an audit label."""

    methods: tuple[str, ...]

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str: ...


class TimePort:
    methods = ("now", "epoch_ms")

    def now(self) -> str:
        return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def epoch_ms(self) -> int:
        return int(time.time() * 1000)

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        return "utc-clock"


class LoggerPort:
    methods = ("info", "warn")

    def __init__(self, sink: list[dict[str, str]], limit: int = 64) -> None:
        self._sink, self._limit = sink, limit

    def _log(self, level: str, message: object) -> None:
        if len(self._sink) < self._limit:
            self._sink.append({"level": level, "message": str(message)[:MAX_LOG_MESSAGE]})

    def info(self, message: object = "") -> None:
        self._log("info", message)

    def warn(self, message: object = "") -> None:
        self._log("warn", message)

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        return "host-log"


def _name(value: object, pattern: str = r"^[a-z0-9][a-z0-9._-]{0,63}$") -> str:
    import re  # noqa: PLC0415 - only for the refusals of ports that were never built

    return value if isinstance(value, str) and re.match(pattern, value) else "?"


def precheck_target(port: object, method: object, args: object, kwargs: object) -> str:
    """The target of a call refused before its port was reached (or one the host never built for this run).

    The same bounded names the ports themselves audit: a logical key, a relative path, a host name, a service,
    the executable's name or the diagnostic tool; never a value, a query string or argv beyond its first word.
    """
    from urllib.parse import urlsplit  # noqa: PLC0415

    pos = list(args) if isinstance(args, (list, tuple)) else []
    kw = kwargs if isinstance(kwargs, dict) else {}
    first = pos[0] if pos else next(iter(kw.values()), None)
    if port == "time":
        return "utc-clock"
    if port == "logger":
        return "host-log"
    if port in ("env", "loopback"):
        return _name(first, r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
    if port == "fs":
        return first[:MAX_TARGET] if isinstance(first, str) and first.isascii() and first.isprintable() else "?"
    if port == "https":
        try:
            host = urlsplit(first).hostname if isinstance(first, str) else None
        except ValueError:
            host = None
        return _name(host, r"^[a-z0-9.-]{1,64}$")
    if port == "process":
        if method == "diagnose":
            host = pos[1] if len(pos) > 1 else kw.get("host")
            return f"diagnose:{_name(first)}:{_name(host)}"[:MAX_TARGET]
        word = first[0] if isinstance(first, list) and first else None
        return f"run:{_name(word)}"
    return "?"


class Broker:
    """One broker per execution: it owns the quota and the audit trail of that run."""

    def __init__(  # noqa: PLR0917 - positional order kept for the existing callers
        self,
        skill_id: str,
        exec_id: str,
        declared: Iterable[str],
        approved_ports: dict[str, Any],
        max_requests: int = MAX_REQUESTS,
        authority: str = "host",
        *,
        granted: frozenset[str],
    ) -> None:
        self.skill_id = skill_id
        self.exec_id = exec_id
        self.authority = authority
        self.declared = frozenset(declared)
        # The capabilities the current authority grants. Required: no default may stand for "every capability".
        self.granted = frozenset(granted)
        self.ports = dict(approved_ports)
        self.max_requests = max_requests
        self.requests = 0
        self.audit: list[AuditEvent] = []
        self.denials: list[str] = []
        self.audit_full = False
        # Calls refused because the audit was full; the overflow record (the audit's last) carries the count.
        self.overflow = 0
        self._overflow_record: AuditEvent | None = None
        self._lock = threading.Lock()
        # Calls started but not ended (start seq -> whether the run abandoned them at its deadline).
        self._inflight: dict[int, bool] = {}

    def _record(  # noqa: PLR0917
        self,
        event: str,
        port: object,
        method: object,
        capability: str | None,
        code: str | None = None,
        target: str = "",
    ) -> int:
        # Callers check the room first (``call``); the cap here only guards against a bug, never drops silently.
        if len(self.audit) >= MAX_AUDIT:
            raise SkillError(AUDIT_FULL, "the audit of this run is full")
        seq = len(self.audit)
        self.audit.append(
            {
                "seq": seq,
                "event": event,
                "exec_id": self.exec_id[:64],
                "skill_id": self.skill_id[:64],
                "authority": self.authority[:64],
                "port": str(port)[:32],
                "method": str(method)[:32],
                "capability": capability,
                "target": target[:MAX_TARGET],
                "code": code,
            }
        )
        return seq

    def _deny(self, port: object, method: object, capability: str | None, code: str, target: str = "") -> SkillError:
        self._record("denied", port, method, capability, code, target)
        self.denials.append(code)
        return SkillError(code, f"{str(port)[:32]}.{str(method)[:32]} denied")

    def _precheck(self, port: object, method: object, args: object, kwargs: object) -> str | None:
        capability = PORT_CAPABILITY.get(port) if isinstance(port, str) else None
        if self.requests > self.max_requests:
            return "CC_SKILL_QUOTA_EXCEEDED"
        if capability is None:
            return "CC_SKILL_PORT_UNKNOWN"
        if capability not in self.declared:
            return "CC_SKILL_CAPABILITY_UNDECLARED"
        if capability not in self.granted:
            return "CC_SKILL_AUTHORITY_DENIED"
        if port not in self.ports:
            return "CC_SKILL_PORT_UNAPPROVED"
        if not isinstance(method, str) or method not in type(self.ports[port]).methods:
            return "CC_SKILL_PORT_METHOD_UNKNOWN"
        if (
            not isinstance(args, (list, tuple))
            or len(args) > 8
            or not isinstance(kwargs, dict)
            or len(kwargs) > 8
            or not all(isinstance(k, str) and not k.startswith("_") for k in kwargs)
        ):
            return "CC_SKILL_PROTOCOL_VIOLATION"
        return None

    def _refuse_full(self, port: object, method: object, capability: str | None, target: str) -> SkillError:
        """The audit has no room for this call: stop the run, fail closed, and count the refusal in the overflow
        record (the audit's last), so no refusal is ever missing from the audit."""
        self.audit_full = True
        self.overflow += 1
        self.denials.append(AUDIT_FULL)
        if self._overflow_record is None:
            seq = self._record("overflow", port, method, capability, AUDIT_FULL, target)
            self._overflow_record = self.audit[seq]
        self._overflow_record["target"] = f"refused={self.overflow}"
        return SkillError(AUDIT_FULL, "the audit of this run is full: the run is stopped")

    def _target(self, port: object, method: object, args: object, kwargs: object) -> str:
        impl = self.ports.get(port) if isinstance(port, str) else None
        try:
            if impl is not None and isinstance(args, (list, tuple)) and isinstance(kwargs, dict):
                target = str(impl.audit_target(method, list(args), kwargs))
            else:
                target = precheck_target(port, method, args, kwargs)
        except Exception:
            target = "?"
        return target if target.isascii() and target.isprintable() and target else "?"

    def call(self, port: Any, method: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = {} if kwargs is None else kwargs
        capability = PORT_CAPABILITY.get(port) if isinstance(port, str) else None
        target = self._target(port, method, args, kwargs)
        with self._lock:
            self.requests += 1
            # Room for this call's start and end records, besides the reserved overflow and late-end records.
            if self.audit_full or len(self.audit) + 2 > MAX_AUDIT - _RESERVED:
                raise self._refuse_full(port, method, capability, target)
            code = self._precheck(port, method, args, kwargs)
            if code:
                raise self._deny(port, method, capability, code, target)
            seq = self._record("start", port, method, capability, target=target)
            self._inflight[seq] = False
        impl = self.ports[port]
        try:
            value = getattr(impl, method)(*list(args), **kwargs)
        except SkillError as exc:
            raise self._end(seq, port, method, capability, exc.code, self._final(impl, target)) from None
        except TypeError:
            raise self._end(seq, port, method, capability, "CC_SKILL_PORT_BAD_ARGS", target) from None
        except Exception:
            # A port must map its own failures; anything escaping one (OSError, UnicodeError, a bug)
            # is still an audited denial.
            raise self._end(seq, port, method, capability, "CC_SKILL_PORT_FAILED", target) from None
        self._end(seq, port, method, capability, None, self._final(impl, target))
        return value

    @staticmethod
    def _final(impl: Any, target: str) -> str:
        """The target the call really reached (a redirect through a decision names that decision)."""
        final = getattr(impl, "final_target", None)
        reached = final() if callable(final) else None
        return reached if isinstance(reached, str) and reached and reached.isascii() else target

    def _end(  # noqa: PLR0917
        self, seq: int, port: object, method: object, capability: str | None, code: str | None, target: str
    ) -> SkillError:
        """Record how a started call ended; one the run abandoned at its deadline ends as ``late-*``."""
        with self._lock:
            late = self._inflight.pop(seq, False)
            event = ("late-" if late else "") + ("done" if code is None else "denied")
            self._record(event, port, method, capability, code, target)
            if code is not None:
                self.denials.append(code)
        return SkillError(code or "", f"{str(port)[:32]}.{str(method)[:32]} denied")

    def abandon(self, code: str) -> None:
        """The run stops waiting for the calls still running (its deadline): each gets an ``abandoned`` record
        now, and its own ``late-done`` or ``late-denied`` record when it ends."""
        with self._lock:
            for seq in list(self._inflight):
                self._inflight[seq] = True
                start = self.audit[seq]
                self._record("abandoned", start["port"], start["method"], start["capability"], code, start["target"])


def default_ports(log_sink: list[dict[str, str]], env_values: dict[str, str] | None = None) -> dict[str, Any]:
    """The always-safe ports (time, logger) plus an environment port over host-chosen values."""
    from skillhost.brokers._env import EnvironmentPort  # noqa: PLC0415 - avoid an import cycle

    ports: dict[str, Any] = {"time": TimePort(), "logger": LoggerPort(log_sink)}
    if env_values is not None:
        ports["env"] = EnvironmentPort(env_values)
    return ports


class _PortProxy:
    def __init__(self, broker: Broker, port: str) -> None:
        self._broker, self._port = broker, port

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._broker.call(self._port, method, list(args), kwargs)

        return call


class HostPorts:
    """The ``ports`` object handed to an in-process (bundled) handler; every call hits the broker."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def __getattr__(self, port: str) -> _PortProxy:
        if port.startswith("_"):
            raise AttributeError(port)
        return _PortProxy(self._broker, port)
