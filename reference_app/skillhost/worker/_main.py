"""One-shot worker: fixed entry point, JSONL frames on stdin/stdout.

Imports only the standard library and stdlib-only policy modules
(``_handler_rules``, ``_handler_sandbox``, ``os_sandbox`` and its platform modules,
``_hostile``): no host modules, no crypto, no database. It applies resource
limits to itself first thing, then its operating-system sandbox
(``os_sandbox.confine``), both before it reads its first frame; only then it
receives the verified handler source snapshot (never a path) in the ``start``
frame, re-checks it with the host's static rules and runs it with allow-listed
builtins and module views. A required sandbox layer that is not applied stops
it before any handler code runs (``CC_SKILL_ISOLATION_UNAVAILABLE``).
"""

import builtins
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Protocol, TypedDict

from skillhost.os_sandbox import Layer, confine, missing_layers, platform_key
from skillhost.worker._handler_rules import ALLOWED_HANDLER_IMPORTS, check_source
from skillhost.worker._handler_sandbox import ImportDeniedError, handler_builtins
from skillhost.worker._hostile import OPERATIONS, attempt, exec_shell, tmp_round_trip

__all__ = ["ALLOWED_HANDLER_IMPORTS", "apply_limits", "main"]

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024
CPU_SECONDS = 15
FILE_BYTES = 1 << 20
OPEN_FILES = 64
# Address space: enough for the interpreter and a 16 KiB result, far below what would hurt the desktop.
ADDRESS_SPACE = 1 << 30
# The worker never starts a process; a non-root user cannot fork past this (root is exempt).
PROCESSES = 0
# Limits the worker must get on every POSIX system, and the ones Linux must grant as well
# (macOS often refuses RLIMIT_AS; there it is reported, not required).
REQUIRED_LIMITS = ("RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE")
LINUX_REQUIRED_LIMITS = ("RLIMIT_AS", "RLIMIT_NPROC")


class _ResourceModule(Protocol):
    """The part of the POSIX ``resource`` module the worker uses (a module satisfies it structurally)."""

    RLIM_INFINITY: int

    def getrlimit(self, resource: int, /) -> tuple[int, int]: ...

    def setrlimit(self, resource: int, limits: tuple[int, int], /) -> None: ...


class LimitsReport(TypedDict):
    applied: bool
    supported: bool
    memory_limited: bool
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
    """Lower this process's limits; ``applied`` is true only when every limit required here took effect."""
    if os.name != "posix":
        return {"applied": False, "supported": False, "memory_limited": False, "limits": {}}
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:
        return {"applied": False, "supported": False, "memory_limited": False, "limits": {}}
    wanted = {
        "RLIMIT_CORE": 0,
        "RLIMIT_CPU": CPU_SECONDS,
        "RLIMIT_FSIZE": FILE_BYTES,
        "RLIMIT_NOFILE": OPEN_FILES,
        "RLIMIT_AS": ADDRESS_SPACE,
        "RLIMIT_NPROC": PROCESSES,
    }
    required = REQUIRED_LIMITS + (LINUX_REQUIRED_LIMITS if sys.platform.startswith("linux") else ())
    limits: dict[str, int | None] = {}
    ok = True
    for name, value in wanted.items():
        try:
            soft, _hard = _lower(resource, name, value)
            took = soft != resource.RLIM_INFINITY and soft <= value
            limits[name] = soft
        except (ValueError, OSError, AttributeError):
            took = False
            limits[name] = None
        ok = ok and (took or name not in required)
    memory = limits.get("RLIMIT_AS") is not None and limits["RLIMIT_AS"] != resource.RLIM_INFINITY
    return {"applied": ok, "supported": True, "memory_limited": bool(memory), "limits": limits}


# A JSONL frame as decoded from the wire: values are checked where they are used.
Frame = dict[str, object]


class _Protocol:
    def __init__(self, inp: IO[bytes], out: IO[bytes]) -> None:
        self.inp, self.out = inp, out
        self.exec_id: str | None = None
        self.next_request = 0

    def send(self, frame: Frame) -> None:
        frame = dict(frame, v=PROTOCOL_VERSION, exec_id=self.exec_id or "")
        # NaN/Infinity are not JSON; the host refuses them too.
        line = json.dumps(frame, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")
        self.out.write(line + b"\n")
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


class _Sink:
    def write(self, s: str) -> int:
        return len(s)

    def flush(self) -> None:
        pass


def _confine() -> tuple[LimitsReport, list[Layer]]:
    """Limits, then the OS sandbox: the order every worker mode starts with, before any input is read."""
    limits = apply_limits()
    return limits, confine(os.getcwd())  # noqa: PTH109 - the host made the cwd the worker's tmp


def _write_line(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def self_test() -> int:
    limits, layers = _confine()
    answer = {
        "kind": "skillhost-worker-self-test",
        "version": 1,
        "pid": os.getpid(),
        "limits_applied": limits["applied"],
        "limits_supported": limits["supported"],
        "memory_limited": limits["memory_limited"],
        "limits": limits["limits"],
        "env_keys": sorted(os.environ)[:64],
        "frozen": bool(getattr(sys, "frozen", False)),
        "protocol_version": PROTOCOL_VERSION,
        "isolation_layers": layers,
    }
    _write_line(answer)
    return 0


def hostile_self_test() -> int:
    """Confine, read the host's targets (one bounded JSON line), try each escape, report, try exec last."""
    _limits, layers = _confine()
    line = sys.stdin.buffer.readline(4096)
    try:
        targets = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return 76
    if not isinstance(targets, dict):
        return 76
    attempts = [attempt(op, targets) for op in OPERATIONS if op != "exec-shell"]
    # Its own folder (the cwd the host made) must stay usable under the same sandbox that refuses the escapes.
    own_folder = tmp_round_trip(os.getcwd())  # noqa: PTH109
    _write_line({"kind": "skillhost-worker-hostile", "version": 1, "pid": os.getpid(),
                 "isolation_layers": layers, "attempts": attempts, "tmp_round_trip": own_folder})  # fmt: skip
    _write_line(exec_shell())
    return 0


def serve() -> int:
    limits, layers = _confine()
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
    missing = missing_layers(layers, platform_key())
    if missing:
        # Fail closed: without every required layer no external code runs (bundled skills are unaffected).
        message = f"sandbox layers not applied: {', '.join(missing)}"
        proto.send({"type": "error", "code": "CC_SKILL_ISOLATION_UNAVAILABLE", "message": message[:200]})
        return 75
    found = check_source(source)
    if found is not None:
        # The host ran the same rules; a snapshot that fails them here was not audited by this build.
        proto.send({"type": "error", "code": found[0], "message": found[1][:200]})
        return 0
    _run_handler(proto, source, start.get("args") or {}, limits["applied"])
    return 0


def _send_result(proto: _Protocol, value: object, limits_applied: bool) -> None:
    try:
        proto.send({"type": "result", "value": value, "pid": os.getpid(), "limits_applied": limits_applied})
    except (ValueError, RecursionError):
        # NaN/Infinity or nesting too deep for JSON: never put a non-JSON frame on the wire.
        proto.send({"type": "error", "code": "CC_SKILL_PROTOCOL_VIOLATION", "message": "result is not valid JSON"})


def _run_handler(proto: _Protocol, source: str, args: object, limits_applied: bool) -> None:
    namespace: dict[str, object] = {"__name__": "skill_handler", "__builtins__": handler_builtins()}
    try:
        code = builtins.compile(source, "<external-skill>", "exec")
        builtins.exec(code, namespace)  # noqa: S102 - running the verified snapshot is the worker's job
        run = namespace.get("run")
        if not callable(run):
            proto.send({"type": "error", "code": "CC_SKILL_HANDLER_INVALID", "message": "no run(ports, args)"})
            return
        value = run(_remote_ports(proto), args)
    except CapabilityDeniedError as exc:
        proto.send({"type": "error", "code": exc.code, "message": "capability denied by host broker"})
    except ImportDeniedError as exc:
        proto.send({"type": "error", "code": "CC_SKILL_IMPORT_DENIED", "message": f"import {str(exc)[:60]}"})
    except SystemExit:
        raise
    except BaseException as exc:
        proto.send({"type": "error", "code": "CC_SKILL_HANDLER_FAILED", "message": exc.__class__.__name__[:80]})
    else:
        _send_result(proto, value, limits_applied)


def main(argv: Sequence[str]) -> int:
    if argv == ["--self-test"]:
        return self_test()
    if argv == ["--hostile-self-test"]:
        return hostile_self_test()
    if argv:
        sys.stdout.write(
            '{"code":"CC_SKILL_USAGE","kind":"skillhost-error","message":"worker takes no '
            'arguments except --self-test or --hostile-self-test","version":1}\n'
        )
        return 2
    return serve()
