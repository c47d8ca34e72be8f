"""The host-boundary step: an external skill runs in its worker, and nothing of it reaches the host process.

First, the trap: every external package the host reads arms a runtime audit
hook (``packaging``'s boundary trap) that records any compile, exec or import of
that package's code in this process, at any time, even code that ran and was
dropped; the step fails on any record, from any step of the journey. Then the
leftovers: the step writes a handler whose function name and result carry a marker made
for this run (so no host code can hold it as a literal), runs it through the
host, and then looks at the host process itself: its module table, every code
object reachable from a live function, and its open files. The handler's name,
its file path or its marker in any of them means external code was loaded into
the host, however it got there.
"""

from __future__ import annotations

import gc
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FunctionType, MethodType

from skillhost._errors import SkillError
from skillhost.host import SkillHost
from skillhost.journey._rows import Package, PackageBuilder
from skillhost.journey._step import Step, _step
from skillhost.packaging import HANDLER_FILENAME, boundary_trap_installed, boundary_violations

SID = "host-boundary-external-not-loaded"

_BOUNDARY_PY = """
def {marker}(args):
    return "{marker}-" + str(len(args))


def run(ports, args):
    return {{"marker": {marker}(args)}}
"""


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _foreign_code(marker: str, root: str) -> list[str]:
    """Names of host code objects compiled from the package, under its name, or holding its marker."""
    found: list[str] = []
    for obj in gc.get_objects():
        func = obj.__func__ if isinstance(obj, MethodType) else obj
        if not isinstance(func, FunctionType):
            continue
        for code in _codes(func.__code__):
            consts = [c for c in code.co_consts if isinstance(c, str)]
            if (
                code.co_filename == HANDLER_FILENAME
                or code.co_filename.startswith(root)
                or marker in code.co_name
                or any(marker in c for c in consts)
            ):
                found.append(code.co_name[:40])
    return found


def _foreign_modules(marker: str, root: str) -> list[str]:
    found = []
    for name, module in list(sys.modules.items()):
        path = str(getattr(module, "__file__", None) or "")
        if marker in name or name == "skill_handler" or path.startswith(root):
            found.append(name[:40])
    return found


def _fd_paths() -> list[str] | None:
    """Paths of this process's open descriptors; ``None`` where the platform cannot list them."""
    if sys.platform.startswith("linux"):
        folder = "/proc/self/fd"
    elif sys.platform == "darwin":
        folder = "/dev/fd"
    else:
        return None
    paths = []
    for entry in os.listdir(folder):  # noqa: PTH208 - descriptor numbers, not paths to walk
        try:
            if sys.platform == "darwin":
                import fcntl  # noqa: PLC0415 - POSIX only

                raw = fcntl.fcntl(int(entry), fcntl.F_GETPATH, bytes(1024))  # type: ignore[attr-defined,unused-ignore]
                paths.append(os.fsdecode(raw.split(b"\0", 1)[0]))
            else:
                paths.append(os.readlink(os.path.join(folder, entry)))  # noqa: PTH115,PTH118
        except OSError:
            continue
    return paths


def _held_files(skill_dir: Path) -> list[str]:
    """Files of the package this process still holds open."""
    root = os.path.realpath(skill_dir)
    paths = _fd_paths()
    if paths is not None:
        return [os.path.basename(p) for p in paths if p.startswith(root)]  # noqa: PTH119
    # Windows: a file this process holds open (Python opens without FILE_SHARE_DELETE) cannot be renamed.
    held = []
    for path in sorted(Path(root).iterdir()):
        moved = path.with_name(path.name + ".boundary")
        try:
            path.rename(moved)
        except OSError:
            held.append(path.name)
            continue
        moved.rename(path)
    return held


def host_boundary_step(host: SkillHost, build: PackageBuilder) -> Step:
    """Run a marked external skill through ``host``; pass only if it ran in a worker and left no trace here."""
    marker = f"boundary_{secrets.token_hex(8)}"
    skill_dir = build(Package("boundary-probe", _BOUNDARY_PY.format(marker=marker)))
    try:
        out = host.run_external(skill_dir, {"n": 1})
    except SkillError as exc:
        return _step(SID, "allow", None, "reject", exc.code, exc.message)
    if not out.ok:
        return _step(SID, "allow", None, "reject", out.code, out.message)
    root = os.path.realpath(skill_dir)
    ran = out.value == {"marker": f"{marker}-1"} and out.worker_pid != os.getpid() and out.reaped
    code, modules, held = _foreign_code(marker, root), _foreign_modules(marker, root), _held_files(skill_dir)
    trapped, armed = boundary_violations(), boundary_trap_installed()
    detail = (
        f"ran in worker {out.worker_pid}: {ran}; trap armed: {armed}, caught {len(trapped)} {trapped[:2]}; "
        f"in the host: code objects {code[:3]}, modules {modules[:3]}, open package files {held[:3]}"
    )
    clean = not trapped and not code and not modules and not held
    return _step(SID, "allow", None, "allow", None, detail, ran and armed and clean)
