"""Host side of external execution: one-shot worker, bounded JSONL protocol, broker forwarding."""
# The protocol loop raises typed SkillErrors into a single kill-and-reap path.
# ruff: noqa: TRY301

import json
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict

from skillhost._canon import canonical_bytes
from skillhost._errors import SkillError
from skillhost._runtime import worker_command, worker_env
from skillhost.brokers import AUDIT_FULL, MAX_REQUESTS, AuditEvent, Broker
from skillhost.host._channel import Worker, harden_host, spawn_confined
from skillhost.os_sandbox import Layer, valid_layers
from skillhost.packaging import VerifiedSkill

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024
MAX_RESULT = 16 * 1024
MAX_DURATION = 10.0
_FRAME_TYPES = {"start", "capability-request", "capability-response", "result", "error"}


@dataclass
class Outcome:
    ok: bool
    code: str | None = None
    message: str = ""
    value: object = None
    worker_pid: int | None = None
    returncode: int | None = None
    reaped: bool = False
    requests: int = 0
    duration_ms: int = 0
    audit: list[AuditEvent] = field(default_factory=list)


class WorkerSelfTest(TypedDict):
    """The fields of the worker's self-test answer that the host reads.

    ``pid``, ``limits_applied`` and ``frozen`` stay ``object``: they are the worker's
    claims, and each caller compares them with what it expects.
    """

    kind: str
    pid: object
    limits_applied: object
    memory_limited: object
    frozen: object
    env_keys: list[str]
    isolation_layers: list[Layer]
    _env_passed: list[str]


_HOST_HARDENED: list[bool] = []


def host_hardened() -> bool:
    """Apply the host-side hardening once per process (Linux: not dumpable); report whether it holds."""
    if not _HOST_HARDENED:
        _HOST_HARDENED.append(harden_host())
    return _HOST_HARDENED[0]


def self_test(timeout: float = 20.0) -> WorkerSelfTest:
    """Spawn ``worker --self-test`` with the minimal env in a fresh cwd; return its parsed answer."""
    cwd = tempfile.mkdtemp(prefix="skillhost-worker-")
    try:
        env = worker_env()
        host_hardened()
        proc, release = spawn_confined(
            [*worker_command(), "--self-test"],
            env,
            cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            release()
        if proc.returncode != 0 or len(out) > MAX_FRAME:
            raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", f"worker self-test exited {proc.returncode}")
        try:
            answer = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker self-test answer is not JSON") from None
        if not isinstance(answer, dict) or answer.get("kind") != "skillhost-worker-self-test":
            raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker self-test answer has the wrong kind")
        env_keys = answer.get("env_keys", [])
        if not isinstance(env_keys, list) or not all(isinstance(k, str) for k in env_keys):
            raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker self-test env_keys is not a list of names")
        layers = answer.get("isolation_layers")
        if not isinstance(layers, list):
            raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", "worker self-test reports no isolation layers")
        return {
            "kind": "skillhost-worker-self-test",
            "isolation_layers": _layers(layers),
            "pid": answer.get("pid"),
            "limits_applied": answer.get("limits_applied"),
            "memory_limited": answer.get("memory_limited"),
            "frozen": answer.get("frozen"),
            "env_keys": env_keys,
            "_env_passed": sorted(env),
        }
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def _layers(reported: list[object]) -> list[Layer]:
    try:
        return valid_layers(reported)
    except ValueError as exc:
        raise SkillError("CC_SKILL_ISOLATION_UNAVAILABLE", f"worker layer report: {exc}") from None


_POLL = 0.05


def _refuse_constant(name: str) -> object:
    raise ValueError(name)


def _decode_frame(line: bytes) -> object:
    """Parse one worker frame; every malformed input is a protocol violation, never a host exception."""
    try:
        frame = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
        # Lone surrogates decode from "\ud800" escapes but cannot be re-encoded: refuse them now.
        canonical_bytes(frame)
    except (UnicodeError, ValueError, RecursionError, MemoryError):
        raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "worker frame is not valid JSON") from None
    return frame


def _call_with_deadline(broker: Broker, frame: dict[str, Any], deadline: float) -> tuple[bool, object]:
    """Run one broker call in a thread the host can abandon, bounded by the run's remaining time.

    Returns ``(True, value)`` or ``(False, SkillError)``; raises ``CC_SKILL_TIMEOUT`` if the port
    is still busy at the deadline (the port's own timeouts then end it in the background).
    """
    box: list[tuple[bool, object]] = []

    def target() -> None:
        try:
            port, method = frame.get("port"), frame.get("method")
            box.append((True, broker.call(port, method, frame.get("args", []), frame.get("kwargs", {}))))
        except SkillError as exc:
            box.append((False, exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(max(deadline - time.monotonic(), 0.0))
    if not box:
        # The call goes on in the background until its port's own timeout: the audit says it was abandoned
        # now, and records how it ended when it does (``late-done`` / ``late-denied``).
        broker.abandon("CC_SKILL_TIMEOUT")
        raise SkillError("CC_SKILL_TIMEOUT", "a host port did not answer before the run deadline")
    return box[0]


def run_external(  # noqa: PLR0912, PLR0915 - one bounded protocol loop, one cleanup path
    verified: VerifiedSkill,
    broker_ports: dict[str, Any],
    args: dict[str, object] | None = None,
    max_duration: float = MAX_DURATION,
    max_requests: int = MAX_REQUESTS,
    *,
    cancel: threading.Event | None = None,
    authority: str = "host",
    protocol_version: int = PROTOCOL_VERSION,
    granted: frozenset[str],
) -> Outcome:
    """Run a verified external skill in a one-shot worker. Always kills and reaps the worker.

    ``cancel`` is the host's abort switch: once set, the run ends with ``CC_SKILL_ABORTED``
    and the worker is killed. ``protocol_version`` is the version this host speaks; it is
    a parameter only so the journey can prove that a worker refuses a version it does not speak.
    """
    max_duration = min(max_duration, MAX_DURATION)
    exec_id = secrets.token_hex(16)
    broker = Broker(
        verified.skill_id,
        exec_id,
        verified.capabilities,
        broker_ports,
        max_requests=max_requests,
        authority=authority,
        granted=granted,
    )
    out = Outcome(ok=False)
    started = time.monotonic()
    deadline = started + max_duration
    cwd = tempfile.mkdtemp(prefix="skillhost-worker-")
    worker: Worker | None = None
    try:
        host_hardened()
        worker = Worker(worker_command(), worker_env(), cwd)
        out.worker_pid = worker.pid

        def send(frame: dict[str, object]) -> None:
            try:
                data = canonical_bytes(dict(frame, v=protocol_version, exec_id=exec_id)) + b"\n"
            except (UnicodeError, ValueError, RecursionError):
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "host frame is not encodable") from None
            if len(data) > MAX_FRAME:
                raise SkillError("CC_SKILL_FRAME_TOO_LARGE", "host frame exceeds the cap")
            if not worker.write(data, deadline):
                raise SkillError("CC_SKILL_TIMEOUT", "worker stopped reading its channel")

        send(
            {
                "type": "start",
                "skill_id": verified.skill_id,
                "source": verified.handler_source,
                "args": args or {},
                "capabilities": verified.capabilities,
            }
        )
        while True:
            if cancel is not None and cancel.is_set():
                raise SkillError("CC_SKILL_ABORTED", "the host cancelled the run")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SkillError("CC_SKILL_TIMEOUT", f"worker exceeded {max_duration:.1f}s")
            event = worker.next_frame(min(remaining, _POLL))
            if event is None:
                continue
            kind, line = event
            if kind == "too-large":
                raise SkillError("CC_SKILL_FRAME_TOO_LARGE", "worker frame exceeds 64 KiB")
            if kind == "truncated":
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "worker closed the channel inside a frame")
            if kind == "eof":
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "worker closed the channel without a result")
            frame = _decode_frame(line)
            if (
                not isinstance(frame, dict)
                or frame.get("v") != protocol_version
                or frame.get("exec_id") != exec_id
                or frame.get("type") not in _FRAME_TYPES
            ):
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "bad version, execution id or frame type")
            ftype = frame["type"]
            if ftype == "capability-request":
                if broker.requests >= max_requests:
                    raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", f"more than {max_requests} capability requests")
                rid = frame.get("request_id")
                ok, value = _call_with_deadline(broker, frame, deadline)
                if broker.audit_full:
                    # The audit has no room left: the run stops here, fail closed, whatever the handler would do.
                    raise SkillError(AUDIT_FULL, "the audit of this run is full: the run is stopped")
                if ok:
                    send({"type": "capability-response", "request_id": rid, "ok": True, "value": value})
                else:
                    assert isinstance(value, SkillError)  # noqa: S101 - _call_with_deadline's contract
                    send(
                        {
                            "type": "capability-response",
                            "request_id": rid,
                            "ok": False,
                            "code": value.code,
                            "message": value.message[:200],
                        }
                    )
            elif ftype == "result":
                if len(canonical_bytes(frame.get("value"))) > MAX_RESULT:
                    raise SkillError("CC_SKILL_RESULT_TOO_LARGE", "result exceeds 16 KiB")
                if frame.get("pid") != worker.pid:
                    raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "result from an unexpected process")
                out.value = frame.get("value")
                break
            elif ftype == "error":
                code = frame.get("code")
                code = code if isinstance(code, str) and code.startswith("CC_SKILL_") else "CC_SKILL_HANDLER_FAILED"
                raise SkillError(code[:64], str(frame.get("message", ""))[:200])
            else:
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", f"unexpected frame type {ftype}")
        if broker.denials:
            # A denial is authoritative even if the handler swallowed the exception.
            raise SkillError(broker.denials[0], "host broker denied a capability request")
        out.ok = True
    except SkillError as exc:
        out.code, out.message = exc.code, exc.message
        if broker.denials and exc.code == "CC_SKILL_HANDLER_FAILED":
            out.code = broker.denials[0]
        if broker.audit_full:
            out.code = AUDIT_FULL
    except OSError as exc:
        # A start the sandbox itself refused (Windows: the install folder lacks its grant) keeps its own code;
        # any other OS error is a broken channel.
        own = getattr(exc, "code", None)
        if isinstance(own, str) and own.startswith("CC_SKILL_"):
            out.code, out.message = own, str(exc)[:200]
        else:
            out.code, out.message = "CC_SKILL_PROTOCOL_VIOLATION", f"worker channel error: {exc.__class__.__name__}"
    finally:
        if worker is not None:
            _end(worker, graceful=out.ok)
            out.returncode = worker.proc.returncode
            out.reaped = True
        shutil.rmtree(cwd, ignore_errors=True)
        out.requests = broker.requests
        # The broker's own list: a call abandoned at the deadline still adds its late end record when it ends.
        out.audit = broker.audit
        out.duration_ms = int((time.monotonic() - started) * 1000)
    return out


def _end(worker: Worker, *, graceful: bool) -> None:
    """Give a finished worker a moment to exit, then kill its whole group, reap it, close our ends."""
    worker.close_stdin()
    if graceful:
        worker.wait_exit(0.5)
    # Always: a worker that exited may have left children in its group.
    worker.kill_tree()
    worker.proc.wait()
    worker.close()
