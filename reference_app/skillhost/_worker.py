"""One-shot worker: fixed entry point, JSONL frames on stdin/stdout.

Imports only the standard library: no host modules, no crypto, no database.
It applies resource limits to itself first thing, then receives the verified
handler source snapshot (never a path) in the ``start`` frame.
"""

import builtins
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import IO, Protocol, TypedDict

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024
CPU_SECONDS = 15
FILE_BYTES = 1 << 20
OPEN_FILES = 64
ALLOWED_HANDLER_IMPORTS = frozenset(
    {"json", "math", "re", "datetime", "itertools", "functools", "collections", "string", "textwrap"}
)
_REMOVED_BUILTINS = (
    "open",
    "exec",
    "eval",
    "compile",
    "input",
    "breakpoint",
    "help",
    "exit",
    "quit",
    "globals",
    "locals",
    "vars",
    "memoryview",
    "getattr",
    "setattr",
    "delattr",
)
REQUIRED_LIMITS = ("RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE")


class _ResourceModule(Protocol):
    """The part of the POSIX ``resource`` module the worker uses (a module satisfies it structurally)."""

    RLIM_INFINITY: int

    def getrlimit(self, resource: int, /) -> tuple[int, int]: ...

    def setrlimit(self, resource: int, limits: tuple[int, int], /) -> None: ...


class LimitsReport(TypedDict):
    applied: bool
    supported: bool
    limits: dict[str, int | None]


def _lower(resource: _ResourceModule, name: str, value: int) -> tuple[int, int]:
    which: int = getattr(resource, name)
    soft, hard = resource.getrlimit(which)
    inf = resource.RLIM_INFINITY
    new_hard = value if hard == inf or hard > value else hard
    new_soft = value if soft == inf or soft > value else soft
    new_soft = min(new_soft, new_hard)
    resource.setrlimit(which, (new_soft, new_hard))
    return resource.getrlimit(which)


def apply_limits() -> LimitsReport:
    """Lower this process's limits. Returns {"applied": bool, "limits": {...}, "platform_support": ...}."""
    if os.name != "posix":
        return {"applied": False, "supported": False, "limits": {}}
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:
        return {"applied": False, "supported": False, "limits": {}}
    wanted = {"RLIMIT_CORE": 0, "RLIMIT_CPU": CPU_SECONDS, "RLIMIT_FSIZE": FILE_BYTES, "RLIMIT_NOFILE": OPEN_FILES}
    limits: dict[str, int | None] = {}
    ok = True
    for name, value in wanted.items():
        try:
            soft, _hard = _lower(resource, name, value)
            limits[name] = soft
            ok = ok and soft != resource.RLIM_INFINITY and soft <= value
        except (ValueError, OSError, AttributeError):
            limits[name] = None
            ok = False
    return {"applied": ok, "supported": True, "limits": limits}


# A JSONL frame as decoded from the wire: values are checked where they are used.
Frame = dict[str, object]


class _Protocol:
    def __init__(self, inp: IO[bytes], out: IO[bytes]) -> None:
        self.inp, self.out = inp, out
        self.exec_id: str | None = None
        self.next_request = 0

    def send(self, frame: Frame) -> None:
        frame = dict(frame, v=PROTOCOL_VERSION, exec_id=self.exec_id or "")
        self.out.write(json.dumps(frame, sort_keys=True, separators=(",", ":")).encode("utf-8") + b"\n")
        self.out.flush()

    def recv(self) -> Frame:
        line = self.inp.readline(MAX_FRAME + 1)
        if not line or len(line) > MAX_FRAME or not line.endswith(b"\n"):
            raise SystemExit(70)
        frame: object = json.loads(line.decode("utf-8"))
        if not isinstance(frame, dict) or frame.get("v") != PROTOCOL_VERSION:
            # Say why once, in our own version, then stop: nothing runs under a protocol we do not speak.
            self.send({"type": "error", "code": "CC_SKILL_PROTOCOL_VIOLATION", "message": "protocol version mismatch"})
            raise SystemExit(71)
        if self.exec_id is not None and frame.get("exec_id") != self.exec_id:
            raise SystemExit(72)
        return frame


class CapabilityDeniedError(Exception):
    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _remote_ports(proto: _Protocol) -> object:
    """The ``ports`` object of an external handler.

    The protocol object lives only in this closure, not in an attribute, so the
    handler cannot reach the raw channel as ``ports._proto`` (attribute access to
    ``_`` names and ``__closure__`` is refused by the host's static audit too).
    """

    def request(port: str, method: str, args: Sequence[object], kwargs: Mapping[str, object]) -> object:
        proto.next_request += 1
        rid = proto.next_request
        proto.send(
            {
                "type": "capability-request",
                "request_id": rid,
                "port": port,
                "method": method,
                "args": list(args),
                "kwargs": kwargs,
            }
        )
        resp = proto.recv()
        if resp.get("type") != "capability-response" or resp.get("request_id") != rid:
            raise SystemExit(73)
        if not resp.get("ok"):
            code = str(resp.get("code", "CC_SKILL_CAPABILITY_DENIED"))
            raise CapabilityDeniedError(code, str(resp.get("message", "")))
        return resp.get("value")

    class RemotePort:
        __slots__ = ("name",)

        def __init__(self, name: str) -> None:
            self.name = name

        def __getattr__(self, method: str) -> Callable[..., object]:
            if method.startswith("_"):
                raise AttributeError(method)
            port = self.name
            return lambda *a, **k: request(port, method, a, k)

    class RemotePorts:
        __slots__ = ()

        def __getattr__(self, port: str) -> RemotePort:
            if port.startswith("_"):
                raise AttributeError(port)
            return RemotePort(port)

    return RemotePorts()


class _ImportDeniedError(Exception):
    pass


def _guarded_import(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] = (),
    level: int = 0,
) -> ModuleType:
    if level or name.split(".", maxsplit=1)[0] not in ALLOWED_HANDLER_IMPORTS:
        raise _ImportDeniedError(name)
    return builtins.__import__(name, globals, locals, fromlist, level)


def _handler_builtins() -> dict[str, object]:
    b = dict(vars(builtins))
    for name in _REMOVED_BUILTINS:
        b.pop(name, None)
    b["__import__"] = _guarded_import
    b["print"] = lambda *a, **k: None
    return b


class _Sink:
    def write(self, s: str) -> int:
        return len(s)

    def flush(self) -> None:
        pass


def self_test() -> int:
    limits = apply_limits()
    answer = {
        "kind": "skillhost-worker-self-test",
        "version": 1,
        "pid": os.getpid(),
        "limits_applied": limits["applied"],
        "limits_supported": limits["supported"],
        "limits": limits["limits"],
        "env_keys": sorted(os.environ)[:64],
        "frozen": bool(getattr(sys, "frozen", False)),
        "protocol_version": PROTOCOL_VERSION,
    }
    sys.stdout.write(json.dumps(answer, sort_keys=True, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0


def serve() -> int:
    limits = apply_limits()
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    sys.stdout = _Sink()
    sys.stderr = _Sink()
    proto = _Protocol(inp, out)
    try:
        start = proto.recv()
    except (SystemExit, ValueError, UnicodeDecodeError):
        return 70
    exec_id, source = start.get("exec_id"), start.get("source")
    if start.get("type") != "start" or not isinstance(exec_id, str) or not isinstance(source, str):
        return 74
    proto.exec_id = exec_id
    if os.name == "posix" and not limits["applied"]:
        proto.send({"type": "error", "code": "CC_SKILL_ISOLATION_UNAVAILABLE", "message": "limits not applied"})
        return 75
    namespace: dict[str, object] = {"__name__": "skill_handler", "__builtins__": _handler_builtins()}
    try:
        code = builtins.compile(source, "<external-skill>", "exec")
        builtins.exec(code, namespace)  # noqa: S102 - running the verified snapshot is the worker's job
        run = namespace.get("run")
        if not callable(run):
            proto.send({"type": "error", "code": "CC_SKILL_HANDLER_INVALID", "message": "no run(ports, args)"})
            return 0
        value = run(_remote_ports(proto), start.get("args") or {})
        proto.send({"type": "result", "value": value, "pid": os.getpid(), "limits_applied": limits["applied"]})
    except CapabilityDeniedError as exc:
        proto.send({"type": "error", "code": exc.code, "message": "capability denied by host broker"})
    except _ImportDeniedError as exc:
        proto.send({"type": "error", "code": "CC_SKILL_IMPORT_DENIED", "message": f"import {str(exc)[:60]}"})
    except SystemExit:
        raise
    except BaseException as exc:
        proto.send({"type": "error", "code": "CC_SKILL_HANDLER_FAILED", "message": exc.__class__.__name__[:80]})
    return 0


def main(argv: Sequence[str]) -> int:
    if argv == ["--self-test"]:
        return self_test()
    if argv:
        sys.stdout.write(
            '{"code":"CC_SKILL_USAGE","kind":"skillhost-error","message":"worker takes no '
            'arguments except --self-test","version":1}\n'
        )
        return 2
    return serve()
