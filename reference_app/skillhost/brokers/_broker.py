"""Host ports and the capability broker.

What a call may do = declared ∩ catalog ∩ authority ∩ broker policy.
Every call is audited with bounded fields and no values: a call that passes the
pre-checks as ``start`` then ``done`` or ``denied``, a call a pre-check refuses
as one ``denied`` record. The audit is capped; a call for which it has no room
left is refused (``CC_SKILL_AUDIT_FULL``), never run unaudited:
the audit names the skill, the authority, the port, the method and at most a
short non-secret target (a logical key name, a host name, a command name), never
an argument value, an environment value, argv or output.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable
from typing import Any, Protocol, TypedDict

from skillhost._errors import SkillError
from skillhost.packaging import PORT_CAPABILITY

MAX_REQUESTS = 32
MAX_LOG_MESSAGE = 200
MAX_AUDIT = 256
MAX_TARGET = 64


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
        return ""


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
        return ""


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
        granted: frozenset[str] | None = None,
    ) -> None:
        self.skill_id = skill_id
        self.exec_id = exec_id
        self.authority = authority
        self.declared = frozenset(declared)
        # The capabilities the current authority grants (``None``: the caller approved ``approved_ports`` itself).
        self.granted = granted
        self.ports = dict(approved_ports)
        self.max_requests = max_requests
        self.requests = 0
        self.audit: list[AuditEvent] = []
        self.denials: list[str] = []
        self.audit_full = False

    def _record(  # noqa: PLR0917
        self,
        event: str,
        port: object,
        method: object,
        capability: str | None,
        code: str | None = None,
        target: str = "",
    ) -> None:
        if len(self.audit) >= MAX_AUDIT:
            return
        self.audit.append(
            {
                "seq": len(self.audit),
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
        if self.granted is not None and capability not in self.granted:
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

    def call(self, port: Any, method: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = {} if kwargs is None else kwargs
        self.requests += 1
        capability = PORT_CAPABILITY.get(port) if isinstance(port, str) else None
        if len(self.audit) > MAX_AUDIT - 3:
            # No room for this call's start and end records and one spare: refuse it rather than run it unaudited.
            # The first such refusal takes the spare record; later ones are refused without one.
            full = "CC_SKILL_AUDIT_FULL"
            if self.audit_full:
                self.denials.append(full)
                raise SkillError(full, "the audit of this run is full")
            self.audit_full = True
            raise self._deny(port, method, capability, full)
        code = self._precheck(port, method, args, kwargs)
        if code:
            raise self._deny(port, method, capability, code)
        impl = self.ports[port]
        args = list(args)
        try:
            target = str(impl.audit_target(method, args, kwargs))
        except Exception:
            target = ""
        if not target.isascii() or not target.isprintable():
            target = "?"
        self._record("start", port, method, capability, target=target)
        try:
            value = getattr(impl, method)(*args, **kwargs)
        except SkillError as exc:
            raise self._deny(port, method, capability, exc.code, target) from None
        except TypeError:
            raise self._deny(port, method, capability, "CC_SKILL_PORT_BAD_ARGS", target) from None
        except Exception:
            # A port must map its own failures; anything escaping one (OSError, UnicodeError, a bug)
            # is still an audited denial.
            raise self._deny(port, method, capability, "CC_SKILL_PORT_FAILED", target) from None
        self._record("done", port, method, capability, target=target)
        return value


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
