"""Host side of external execution: one-shot worker, bounded JSONL protocol, broker forwarding."""
# The protocol loop raises typed SkillErrors into a single kill-and-reap path.
# ruff: noqa: TRY301

import contextlib
import json
import queue
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, TypedDict

from skillhost._broker import MAX_REQUESTS, AuditEvent, Broker
from skillhost._canon import canonical_bytes
from skillhost._errors import SkillError
from skillhost._package import VerifiedSkill
from skillhost._runtime import worker_command, worker_env

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
    frozen: object
    env_keys: list[str]
    _env_passed: list[str]


def _spawn(cwd: str) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    env = worker_env()
    proc = subprocess.Popen(
        worker_command(),
        shell=False,
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )
    return proc, env


def self_test(timeout: float = 20.0) -> WorkerSelfTest:
    """Spawn ``worker --self-test`` with the minimal env in a fresh cwd; return its parsed answer."""
    cwd = tempfile.mkdtemp(prefix="skillhost-worker-")
    try:
        env = worker_env()
        proc = subprocess.Popen(
            [*worker_command(), "--self-test"],
            shell=False,
            env=env,
            cwd=cwd,
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
        return {
            "kind": "skillhost-worker-self-test",
            "pid": answer.get("pid"),
            "limits_applied": answer.get("limits_applied"),
            "frozen": answer.get("frozen"),
            "env_keys": env_keys,
            "_env_passed": sorted(env),
        }
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


# (kind, line): kind is "line", "eof" or "too-large"; only a "line" carries bytes.
_ReaderEvent = tuple[str, bytes]


def _reader(stream: IO[bytes], q: queue.Queue[_ReaderEvent]) -> None:
    try:
        while True:
            line = stream.readline(MAX_FRAME + 1)
            if not line:
                q.put(("eof", b""))
                return
            if len(line) > MAX_FRAME or not line.endswith(b"\n"):
                q.put(("too-large", b""))
                return
            q.put(("line", line))
    except (OSError, ValueError):
        q.put(("eof", b""))


_POLL = 0.05


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
) -> Outcome:
    """Run a verified external skill in a one-shot worker. Always kills and reaps the worker.

    ``cancel`` is the host's abort switch: once set, the run ends with ``CC_SKILL_ABORTED``
    and the worker is killed. ``protocol_version`` is the version this host speaks; it is
    a parameter only so the journey can prove that a worker refuses a version it does not speak.
    """
    max_duration = min(max_duration, MAX_DURATION)
    exec_id = secrets.token_hex(16)
    broker = Broker(
        verified.skill_id, exec_id, verified.capabilities, broker_ports, max_requests=max_requests, authority=authority
    )
    out = Outcome(ok=False)
    started = time.monotonic()
    cwd = tempfile.mkdtemp(prefix="skillhost-worker-")
    proc = None
    try:
        proc, _ = _spawn(cwd)
        out.worker_pid = proc.pid
        stdin, stdout = proc.stdin, proc.stdout
        if stdin is None or stdout is None:  # PIPE was requested; this keeps the types honest
            raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "worker has no channel")
        q: queue.Queue[_ReaderEvent] = queue.Queue()
        threading.Thread(target=_reader, args=(stdout, q), daemon=True).start()

        def send(frame: dict[str, object]) -> None:
            data = canonical_bytes(dict(frame, v=protocol_version, exec_id=exec_id)) + b"\n"
            if len(data) > MAX_FRAME:
                raise SkillError("CC_SKILL_FRAME_TOO_LARGE", "host frame exceeds the cap")
            stdin.write(data)
            stdin.flush()

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
            remaining = max_duration - (time.monotonic() - started)
            if remaining <= 0:
                raise SkillError("CC_SKILL_TIMEOUT", f"worker exceeded {max_duration:.1f}s")
            try:
                kind, line = q.get(timeout=min(remaining, _POLL))
            except queue.Empty:
                continue
            if kind == "too-large":
                raise SkillError("CC_SKILL_FRAME_TOO_LARGE", "worker frame exceeds 64 KiB")
            if kind == "eof":
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "worker closed the channel without a result")
            try:
                frame = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise SkillError("CC_SKILL_PROTOCOL_VIOLATION", "worker frame is not JSON") from None
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
                try:
                    value = broker.call(
                        frame.get("port"), frame.get("method"), frame.get("args", []), frame.get("kwargs", {})
                    )
                    send({"type": "capability-response", "request_id": rid, "ok": True, "value": value})
                except SkillError as exc:
                    send(
                        {
                            "type": "capability-response",
                            "request_id": rid,
                            "ok": False,
                            "code": exc.code,
                            "message": exc.message[:200],
                        }
                    )
            elif ftype == "result":
                if len(canonical_bytes(frame.get("value"))) > MAX_RESULT:
                    raise SkillError("CC_SKILL_RESULT_TOO_LARGE", "result exceeds 16 KiB")
                if frame.get("pid") != proc.pid:
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
    except OSError as exc:
        out.code, out.message = "CC_SKILL_PROTOCOL_VIOLATION", f"worker channel error: {exc.__class__.__name__}"
    finally:
        if proc is not None:
            if proc.poll() is None:
                if proc.stdin is not None:
                    with contextlib.suppress(OSError):
                        proc.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.5 if out.ok else 0)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            out.returncode = proc.returncode
            out.reaped = True
            if proc.stdout is not None:
                with contextlib.suppress(OSError):
                    proc.stdout.close()
        shutil.rmtree(cwd, ignore_errors=True)
        out.requests = broker.requests
        out.audit = broker.audit
        out.duration_ms = int((time.monotonic() - started) * 1000)
    return out
