"""One small interface over each platform's worker sandbox (README, "Operating-system sandbox").

Standard library only: both the worker and the host import it. Two halves:

* **host side**, ``launch_plan``: how the host starts a worker (macOS wraps
  the command in ``sandbox-exec``; Windows starts it itself, in an AppContainer,
  suspended, puts it in a job object and resumes it; Linux starts it plainly,
  the worker confines itself);
* **worker side**, ``confine``: what the worker applies to itself (Linux) or
  asks the kernel about itself (macOS, Windows) before it reads its first
  frame, as one ``Layer`` report per layer.

The platform modules are loaded lazily, by the platform that needs them, and
import only ``_interface``, never this module: no loop runs through the
dispatcher (held by tests/reference_app/test_layering.py).

``REQUIRED_LAYERS`` is what this app itself refuses to run external skills
without (``CC_SKILL_ISOLATION_UNAVAILABLE``); the pipeline's policy names its
own list per platform and checks the recorded layers against it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence

from skillhost.os_sandbox._interface import LaunchPlan, Layer, layer

__all__ = [
    "REQUIRED_LAYERS", "confine", "launch_plan", "missing_layers", "platform_key", "sandbox_denies", "valid_layers",
    "worker_interpreter", "worker_read_roots",
]  # fmt: skip

REQUIRED_LAYERS: Mapping[str, tuple[str, ...]] = {
    "linux": ("no-new-privs", "landlock-fs", "landlock-net", "seccomp"),
    "macos": ("sandbox-exec",),
    # The AppContainer owns the file, network and host-process refusals, the child-process policy the exec;
    # its token is also low integrity (``restricted-token``). Under the fallback token alone two kernel steps
    # cannot pass, so it is not enough.
    "windows": ("job-object", "no-child-process", "appcontainer", "restricted-token"),
}


MAX_LAYERS = 16


def valid_layers(reported: Sequence[object]) -> list[Layer]:
    """A worker's layer report, checked entry by entry (the host reads it from another process)."""
    if len(reported) > MAX_LAYERS:
        raise ValueError(f"more than {MAX_LAYERS} layers")
    out: list[Layer] = []
    for entry in reported:
        if not isinstance(entry, dict) or set(entry) != {"name", "applied", "detail"}:
            raise ValueError("a layer is not {name, applied, detail}")
        name, applied, detail = entry["name"], entry["applied"], entry["detail"]
        if not isinstance(name, str) or not 0 < len(name) <= 32 or not isinstance(applied, bool):
            raise ValueError("a layer has a bad name or applied flag")
        if not isinstance(detail, str):
            raise ValueError(f"layer {name}: detail is not text")  # noqa: TRY004 - one error type for the host
        out.append(layer(name, applied=applied, detail=detail))
    if len({e["name"] for e in out}) != len(out):
        raise ValueError("a layer is reported twice")
    return out


def platform_key() -> str:
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux"


def missing_layers(layers: Iterable[object], platform: str) -> list[str]:
    """The required layers of ``platform`` that ``layers`` does not report as applied (fail closed)."""
    applied = {
        entry.get("name")
        for entry in layers
        if isinstance(entry, dict) and entry.get("applied") is True
    }
    return [name for name in REQUIRED_LAYERS.get(platform, ("unknown-platform",)) if name not in applied]


def launch_plan(argv: Sequence[str], tmp_dir: str, read_roots: Sequence[str]) -> LaunchPlan:
    platform = platform_key()
    if platform == "macos":
        import sysconfig  # noqa: PLC0415 - the host's only, never the worker's

        from skillhost.os_sandbox._macos import framework_executable, wrap_command  # noqa: PLC0415 - macOS only

        frozen = bool(getattr(sys, "frozen", False))
        framework = framework_executable(sys.base_prefix, sysconfig.get_config_var("PYTHONFRAMEWORK"), frozen=frozen)
        return LaunchPlan(wrap_command(argv, tmp_dir, read_roots, framework))
    if platform == "windows":
        from skillhost.os_sandbox._windows_process import plan  # noqa: PLC0415 - Windows only

        return plan(argv, tmp_dir, read_roots)
    return LaunchPlan(list(argv))


def worker_interpreter() -> str:
    """What the worker runs: this executable, except on Windows from source, where it is the base interpreter.

    A venv's ``python.exe`` there is a redirector that starts the base interpreter as its child, which the
    worker's child-process policy and its job's one-process limit refuse; ``sys._base_executable`` is that
    base interpreter, resolved. Frozen, the bundle's own executable is the worker.
    """
    if platform_key() == "windows" and not getattr(sys, "frozen", False):
        return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return sys.executable


def worker_read_roots() -> list[str]:
    """What a worker may read: the installed bundle (frozen) or the interpreter and the app source."""
    # os.path, not pathlib: the worker imports this module before its first frame (pathlib costs ~15 ms).
    if getattr(sys, "frozen", False):
        roots = [os.path.dirname(os.path.realpath(sys.executable))]  # noqa: PTH120
    else:
        # This file is <app source>/skillhost/os_sandbox/_dispatch.py.
        app_src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # noqa: PTH120
        if platform_key() == "windows":
            # Only what the base interpreter reads: its own folder (the DLLs, Lib, DLLs\), never the venv's
            # prefix, which it does not start from; each must hold the install grant (``_windows_grant``).
            roots = [app_src, os.path.dirname(worker_interpreter())]  # noqa: PTH120
        else:
            roots = [app_src, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    return sorted({os.path.realpath(r) for r in roots})


def confine(tmp_dir: str) -> list[Layer]:
    """Worker side: confine this process (Linux) or report how the host confined it (macOS, Windows)."""
    platform = platform_key()
    if platform == "linux":
        from skillhost.os_sandbox._linux import apply  # noqa: PLC0415 - per platform

        return apply(worker_read_roots(), tmp_dir)
    if platform == "macos":
        from skillhost.os_sandbox._macos import self_report  # noqa: PLC0415 - per platform

        return self_report(len(worker_read_roots()))
    from skillhost.os_sandbox._windows import self_report as windows_report  # noqa: PLC0415 - per platform

    return windows_report()


def sandbox_denies(operation: str, argument: str | None = None) -> bool:
    """Worker side: whether this platform's sandbox itself says it denies ``operation`` (on ``argument``) to this
    process, macOS's ``sandbox_check``; ``False`` elsewhere, where the layers are read from the errno."""
    if platform_key() != "macos":
        return False
    from skillhost.os_sandbox._macos import sandbox_denies as macos_denies  # noqa: PLC0415 - per platform

    return macos_denies(operation, argument)
