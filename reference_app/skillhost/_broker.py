"""Host ports and the capability broker.

What a call may do = declared ∩ catalog ∩ approved port (authority) ∩ broker policy.
Every call is audited (start / done / denied) with bounded fields and no values.
"""

import datetime
import time

from skillhost._errors import SkillError
from skillhost._manifest import PORT_CAPABILITY

MAX_REQUESTS = 32
MAX_LOG_MESSAGE = 200
MAX_AUDIT = 256


class TimePort:
    methods = ("now", "epoch_ms")

    def now(self):
        return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def epoch_ms(self):
        return int(time.time() * 1000)


class LoggerPort:
    methods = ("info", "warn")

    def __init__(self, sink: list, limit: int = 64):
        self._sink, self._limit = sink, limit

    def _log(self, level, message):
        if len(self._sink) < self._limit:
            self._sink.append({"level": level, "message": str(message)[:MAX_LOG_MESSAGE]})

    def info(self, message=""):
        return self._log("info", message)

    def warn(self, message=""):
        return self._log("warn", message)


class EnvPort:
    """Logical keys only, per skill: values come from a host-chosen mapping, never os.environ."""

    methods = ("get",)

    def __init__(self, values: dict):
        self._values = dict(values)

    def get(self, key=""):
        if not isinstance(key, str) or key not in self._values:
            raise SkillError("CC_SKILL_ENV_KEY_DENIED", "logical key not granted to this skill")
        return self._values[key]


class Broker:
    def __init__(self, skill_id: str, exec_id: str, declared, approved_ports: dict, max_requests: int = MAX_REQUESTS):
        self.skill_id = skill_id
        self.exec_id = exec_id
        self.declared = frozenset(declared)
        self.ports = dict(approved_ports)
        self.max_requests = max_requests
        self.requests = 0
        self.audit: list = []
        self.denials: list = []

    def _record(self, event, port, method, capability, code=None):
        if len(self.audit) >= MAX_AUDIT:
            return
        self.audit.append(
            {
                "seq": len(self.audit),
                "event": event,
                "exec_id": self.exec_id[:64],
                "skill_id": self.skill_id[:64],
                "port": str(port)[:32],
                "method": str(method)[:32],
                "capability": capability,
                "code": code,
            }
        )

    def call(self, port: str, method: str, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        self.requests += 1
        capability = PORT_CAPABILITY.get(port) if isinstance(port, str) else None
        code = None
        if self.requests > self.max_requests:
            code = "CC_SKILL_QUOTA_EXCEEDED"
        elif capability is None:
            code = "CC_SKILL_PORT_UNKNOWN"
        elif capability not in self.declared:
            code = "CC_SKILL_CAPABILITY_UNDECLARED"
        elif port not in self.ports:
            code = "CC_SKILL_PORT_UNAPPROVED"
        elif not isinstance(method, str) or method not in type(self.ports[port]).methods:
            code = "CC_SKILL_PORT_METHOD_UNKNOWN"
        elif (
            not isinstance(args, (list, tuple))
            or len(args) > 8
            or not isinstance(kwargs, dict)
            or len(kwargs) > 8
            or not all(isinstance(k, str) for k in kwargs)
        ):
            code = "CC_SKILL_PROTOCOL_VIOLATION"
        if code:
            self._record("denied", port, method, capability, code)
            self.denials.append(code)
            raise SkillError(code, f"{port}.{method} denied")
        self._record("start", port, method, capability)
        try:
            value = getattr(self.ports[port], method)(*args, **kwargs)
        except SkillError as exc:
            self._record("denied", port, method, capability, exc.code)
            self.denials.append(exc.code)
            raise
        except TypeError:
            self._record("denied", port, method, capability, "CC_SKILL_PORT_BAD_ARGS")
            self.denials.append("CC_SKILL_PORT_BAD_ARGS")
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", f"{port}.{method}: bad arguments") from None
        self._record("done", port, method, capability)
        return value


def default_ports(log_sink: list, env_values=None) -> dict:
    """Ports the host approves in this first cut. fs/process/https brokers are not approved yet."""
    ports = {"time": TimePort(), "logger": LoggerPort(log_sink)}
    if env_values is not None:
        ports["env"] = EnvPort(env_values)
    return ports


class _PortProxy:
    def __init__(self, broker, port):
        self._broker, self._port = broker, port

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args, **kwargs):
            return self._broker.call(self._port, method, list(args), kwargs)

        return call


class HostPorts:
    """The ``ports`` object handed to an in-process (bundled) handler; every call hits the broker."""

    def __init__(self, broker):
        self._broker = broker

    def __getattr__(self, port):
        if port.startswith("_"):
            raise AttributeError(port)
        return _PortProxy(self._broker, port)
