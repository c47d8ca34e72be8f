"""Journey steps only the operating system can pass: a hostile worker's escapes, refused by the kernel.

One sandboxed worker runs ``worker --hostile-self-test`` (``_hostile``): after
its sandbox is applied, its own trusted code reads a host file outside the
bundle, writes outside its temporary folder, connects to a loopback TCP port
the host listens on, seizes the host with ``ptrace`` and finally executes
``/bin/sh``. No handler and no Python guard stands in the way, so each step
passes only when the kernel refused with ``EACCES`` or ``EPERM`` *and* that
errno is how a layer the worker reports as applied refuses that operation
(``REFUSED_BY``); the step records that layer (``layer``, and in its detail).
Where an errno cannot name the layer (macOS: Seatbelt's ``EPERM`` is also a
hardened runtime's), the worker's own attribution must as well: the layer the
sandbox itself named through ``sandbox_check`` (``WORKER_ATTRIBUTED``).
A refusal no applied layer accounts for (a file's own permissions, a layer
that was not applied, one the sandbox does not say it refused) is
inconclusive and records none; the policy's step
table names the layer each step must be refused by, so the pipeline fails a
step refused by the wrong one. The same answer carries the worker's layer
report, which the journey records beside its steps.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from skillhost._runtime import worker_command, worker_env
from skillhost.host import MAX_FRAME, host_hardened, spawn_confined
from skillhost.journey._step import Step, _step
from skillhost.journey._tmp_folder import tmp_folder_step
from skillhost.os_sandbox import Layer, platform_key, valid_layers
from skillhost.worker import OPERATIONS

DENIED_CODE = "CC_SKILL_SANDBOX_DENIED"
# Refused, but not as a sandbox refuses (ENOENT, ECONNREFUSED...): the step cannot tell who stopped it.
INCONCLUSIVE_CODE = "CC_SKILL_SANDBOX_INCONCLUSIVE"
KERNEL_ERRNOS = ("EACCES", "EPERM")
STEP_IDS = {op: f"kernel-refuses-{op}" for op in OPERATIONS}

# Which layer refuses each operation, and with which errno, on each platform.
REFUSED_BY: dict[str, dict[tuple[str, str], str]] = {
    "linux": {
        ("read-outside-bundle", "EACCES"): "landlock-fs",
        ("write-outside-tmp", "EACCES"): "landlock-fs",
        ("tcp-connect-loopback", "EPERM"): "seccomp",  # socket() is not on the allow-list
        ("tcp-connect-loopback", "EACCES"): "landlock-net",  # connect() to a TCP port
        ("ptrace-host", "EPERM"): "seccomp",
        ("exec-shell", "EPERM"): "seccomp",
        ("exec-shell", "EACCES"): "landlock-fs",  # no execute right outside the bundle
    },
    # Seatbelt answers EPERM for a denied operation (EACCES for some file opens).
    "macos": {(op, err): "sandbox-exec" for op in OPERATIONS for err in KERNEL_ERRNOS},
    "windows": {
        # Access checks against the AppContainer's SID: only the bundle and the worker's folder grant it.
        ("read-outside-bundle", "EACCES"): "appcontainer",
        ("write-outside-tmp", "EACCES"): "appcontainer",
        # An AppContainer without the network capabilities cannot connect, loopback included (WSAEACCES).
        ("tcp-connect-loopback", "EACCES"): "appcontainer",
        # OpenProcess on the host: the AppContainer's token has no access to the user's processes.
        ("ptrace-host", "EACCES"): "appcontainer",
        # The child-process policy of its start: the worker may create no process (before the job's limit).
        ("exec-shell", "EACCES"): "no-child-process",
    },
}
# Where the errno alone does not name the layer: the one the worker's own attribution must name (the attempt's
# ``layer``, which the worker sets only when ``sandbox_check`` says the profile denies that operation on that
# argument). Linux's and Windows' layers answer with errnos of their own and stay read from the errno.
WORKER_ATTRIBUTED: dict[str, str] = {"macos": "sandbox-exec"}
# Under the fallback token (no AppContainer), the restricted low-integrity token refuses the file writes and
# the host process; nothing it holds refuses a read of a world-readable file or a loopback connect.
_RESTRICTED_TOKEN = {("write-outside-tmp", "EACCES"), ("ptrace-host", "EACCES")}


def refusing_layer(platform: str, op: str, errno: str | None, layers: list[Layer]) -> str | None:
    """The applied layer that refuses ``op`` with ``errno`` on ``platform``, or ``None`` when none accounts for it."""
    if errno is None:
        return None
    applied = {entry["name"] for entry in layers if entry["applied"]}
    name = REFUSED_BY.get(platform, {}).get((op, errno))
    if name == "appcontainer" and name not in applied and (op, errno) in _RESTRICTED_TOKEN:
        name = "restricted-token"
    return name if name in applied else None


def credited_layer(platform: str, op: str, errno: str | None, layers: list[Layer], attributed: object) -> str | None:
    """``refusing_layer``, and on a ``WORKER_ATTRIBUTED`` platform only when the worker's ``attributed`` (the
    attempt's ``layer``) names that same layer: an errno, or a layer merely applied, is not the sandbox's word."""
    name = refusing_layer(platform, op, errno, layers) if errno in KERNEL_ERRNOS else None
    required = WORKER_ATTRIBUTED.get(platform)
    return None if required is not None and name == required and attributed != name else name


def _run_hostile(targets: dict[str, object], timeout: float = 20.0) -> tuple[list[object], str]:
    """The worker's output lines (at most two), or ``[]`` and why not."""
    cwd = tempfile.mkdtemp(prefix="skillhost-worker-")
    try:
        host_hardened()
        proc, release = spawn_confined(
            [*worker_command(), "--hostile-self-test"],
            worker_env(),
            cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            out, _ = proc.communicate(json.dumps(targets).encode() + b"\n", timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return [], "the hostile worker did not finish"
        finally:
            if proc.poll() is not None:
                release()
        if len(out) > MAX_FRAME:
            return [], "the hostile worker wrote too much"
        try:
            return [json.loads(line) for line in out.decode("utf-8").splitlines()[:2]], ""
        except (UnicodeDecodeError, ValueError):
            return [], f"the hostile worker's output is not JSON (exit {proc.returncode})"
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def _attempt_step(op: str, found: object, write_path: Path, layers: list[Layer]) -> Step:
    sid = STEP_IDS[op]
    if not isinstance(found, dict) or found.get("op") != op or not isinstance(found.get("ok"), bool):
        return _step(sid, "reject", DENIED_CODE, "reject", INCONCLUSIVE_CODE, f"{op}: no result from the worker")
    if found["ok"]:
        return _step(sid, "reject", DENIED_CODE, "allow", None, f"{op}: the operating system allowed it")
    errno = found.get("errno")
    errno = errno if isinstance(errno, str) and errno.isalnum() and len(errno) <= 16 else None
    platform = platform_key()
    by = credited_layer(platform, op, errno, layers, found.get("layer"))
    code = DENIED_CODE if by else INCONCLUSIVE_CODE
    # A refused write must have left nothing behind, whatever the worker says.
    untouched = op != "write-outside-tmp" or not write_path.exists()
    detail = f"{op}: refused with {errno} by {by or 'no layer the worker reports applied'}"
    errno_layer = refusing_layer(platform, op, errno, layers) if errno in KERNEL_ERRNOS else None
    if by is None and errno_layer is not None:
        detail = f"{op}: refused with {errno}, but the worker's sandbox_check does not name {errno_layer}"
    detail += "" if op != "write-outside-tmp" else f"; file absent={untouched}"
    # The record names the refusing layer; the policy's step table says which one must (QE_STEP_WRONG_LAYER).
    return _step(sid, "reject", DENIED_CODE, "reject", code, detail, untouched, errno=errno, layer=by)


def kernel_steps(tmp: Path) -> tuple[list[Step], list[Layer]]:
    """The five kernel-refusal steps, in ``OPERATIONS`` order, then its own-folder step (``_tmp_folder``), and the
    hostile worker's layer report."""
    host_data = tmp / "host-data"
    host_data.mkdir()
    secret = host_data / "host-secret.txt"
    secret.write_text("host data the worker must not read\n", encoding="utf-8")
    write_path = host_data / "written-by-worker.txt"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        targets = {"read_path": str(secret), "write_path": str(write_path), "tcp_port": port}
        lines, why = _run_hostile(targets)
    answer = lines[0] if lines and isinstance(lines[0], dict) else {}
    attempts = answer.get("attempts") if answer.get("kind") == "skillhost-worker-hostile" else None
    by_op: dict[object, object] = (
        {a.get("op"): a for a in attempts if isinstance(a, dict)} if isinstance(attempts, list) else {}
    )
    if len(lines) > 1:
        # The worker's own refusal, or EXEC_OK_LINE printed by the shell that replaced it.
        by_op["exec-shell"] = lines[1]
    try:
        layers = valid_layers(answer.get("isolation_layers") or [])
    except ValueError:
        layers = []
    steps = [_attempt_step(op, by_op.get(op), write_path, layers) for op in OPERATIONS]
    steps.append(tmp_folder_step(answer, steps[OPERATIONS.index("write-outside-tmp")]))  # its own folder, after
    for step in steps if why else ():
        step["detail"] = f"{step['detail']}; {why}"[:400]
    return steps, layers
