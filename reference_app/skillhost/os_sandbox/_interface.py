"""What every platform module of the OS sandbox speaks: the layer report and the launch plan.

Standard library only, and a leaf: the platform modules import this module,
never their dispatcher (``_dispatch``), which loads them lazily; so no platform
module is imported through a loop (docs: reference_app/README.md, "Layout").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, Any, NamedTuple, Protocol, TypedDict

__all__ = ["MAX_DETAIL", "Layer", "LaunchPlan", "WorkerProcess", "layer"]

MAX_DETAIL = 120


class Layer(TypedDict):
    """One isolation layer as the worker reports it: applied or not, and why not."""

    name: str
    applied: bool
    detail: str


def layer(name: str, *, applied: bool, detail: str) -> Layer:
    return {"name": name, "applied": bool(applied), "detail": detail[:MAX_DETAIL]}


class WorkerProcess(Protocol):
    """What the host uses of a started worker: ``subprocess.Popen``, or Windows' own start."""

    pid: int
    returncode: int | None
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...
    def communicate(self, input: bytes | None = None, timeout: float | None = None) -> tuple[Any, Any]: ...


class LaunchPlan(NamedTuple):
    """How the host starts one worker: the command, extra ``Popen`` arguments, a hook run right after.

    A ``NamedTuple``, not a dataclass: the worker imports this module, and ``dataclasses`` costs it ~14 ms.
    """

    argv: list[str]
    popen_kwargs: Mapping[str, object] = {}
    # Given the started ``Popen``; raises ``OSError`` when the worker could not be confined (then killed).
    # Returns what to call once the worker is reaped (Windows: close the job handle).
    after_spawn: Callable[[object], Callable[[], None]] | None = None
    # Where ``Popen`` cannot start the worker (Windows' AppContainer): ``start(env, cwd, **popen)`` starts it
    # with the same stream arguments and returns the process and what to call once it is reaped.
    start: Callable[..., tuple[WorkerProcess, Callable[[], None]]] | None = None
