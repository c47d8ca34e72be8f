"""Running app code through the platform's adapter: the only way the producer starts app-controlled code.

``StageRunner`` holds the adapter chosen for the job and the paths no stage may see; each ``run`` wraps one
command, runs it bounded (timeout, capped output, the whole tree killed on every way out), reads back what
the stage ran under, and keeps that as the stage's evidence. A confinement that cannot be set up or read
back stops the job (``QE_CONFINEMENT_UNAVAILABLE``): app code never runs with less than was asked for.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import AppStage, Code, QualificationError

from ..processes import ProcessResult, run_bounded
from ._stage import Confinement, ConfinementError, ConfinementFacts, StageSandbox, exposes


def producer_python() -> str:
    """The ``{python}`` placeholder's value: this interpreter, as an absolute path without ``..`` segments.

    Inside a sandbox only the bound folders exist, so a path that climbs out of one (``bin/../python``)
    would not resolve there.
    """
    return os.path.abspath(sys.executable)  # noqa: PTH100 - resolve() would follow the venv's link out of it


@dataclass
class StageRunner:
    """The job's adapter, its protected paths, and the facts of every stage it ran, in order."""

    confinement: Confinement
    protected: tuple[Path, ...]
    # Which stages keep the machine's network (the policy's [confinement] network).
    network_stages: frozenset[str] = frozenset({"build"})
    facts: list[ConfinementFacts] = field(default_factory=list)
    # Told what each run starts (the stage and the command line), for the progress line; never evidence.
    observer: Callable[[str], None] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def toolchain(self, extra: Iterable[Path] = (), path_variable: str | None = None) -> tuple[Path, ...]:
        """The read-only tool folders: the producer's Python prefixes, ``extra``, and each PATH entry.

        A PATH entry that is relative, missing, or would show a protected path (the checkout itself, HOME) is
        left out: the stage then cannot find a tool there, which is the point.
        """
        candidates = [Path(sys.prefix).absolute(), Path(sys.base_prefix).absolute(), Path(producer_python()).parent,
                      Path(sys.executable).resolve().parent, *extra]
        for entry in (path_variable or "").split(os.pathsep):
            if entry:
                candidates.append(Path(entry))
        kept: list[Path] = []
        for path in candidates:
            if not path.is_absolute() or not path.is_dir() or exposes(path, self.protected) is not None:
                continue
            if path not in kept and not _system(path):
                kept.append(path)
        return tuple(kept)

    def sandbox(self, stage: AppStage, *, home: Path, tmp: Path, writable: Sequence[Path],
                readable: Sequence[Path] = (), toolchain: Sequence[Path] = (), sockets: Sequence[Path] = (),
                cwd: Path | None = None) -> StageSandbox:
        """A ``StageSandbox`` for ``stage`` with the job's protected paths and the policy's network rule."""
        return StageSandbox(stage=stage, home=home, tmp=tmp, writable=tuple(writable), readable=tuple(readable),
                            toolchain=tuple(toolchain), sockets=tuple(sockets),
                            network=stage in self.network_stages, protected=self.protected, cwd=cwd)

    def run(self, argv: Sequence[str], sandbox: StageSandbox, *, timeout: float, env: Mapping[str, str],
            stdout_cap: int = 64 * 1024, stderr_cap: int = 16 * 1024, umask: int | None = None,
            cancel: threading.Event | None = None) -> ProcessResult:
        """Run ``argv`` confined to ``sandbox``; its facts are kept (``facts``) once it and its tree ended."""
        if self.observer is not None:
            self.observer(f"{sandbox.stage}: {' '.join(argv)}")
        try:
            command = self.confinement.wrap(argv, sandbox, env)
        except ConfinementError as exc:
            raise QualificationError(Code.CONFINEMENT_UNAVAILABLE,
                                     f"the {sandbox.stage} stage cannot be confined: {exc}") from exc
        try:
            result = run_bounded(command.argv, timeout=timeout, cwd=sandbox.cwd or sandbox.home, env=command.env,
                                 stdout_cap=stdout_cap, stderr_cap=stderr_cap, umask=umask, cancel=cancel,
                                 pass_fds=command.pass_fds)
            try:
                facts = command.finish()
            except ConfinementError as exc:
                raise QualificationError(Code.CONFINEMENT_UNAVAILABLE,
                                         f"the {sandbox.stage} stage's confinement cannot be confirmed: {exc}") from exc
        finally:
            command.close()
        with self._lock:
            self.facts.append(facts)
        return result


def _system(path: Path) -> bool:
    """A folder the Linux adapter binds anyway (``/usr`` and the merged-/usr links): no need to list it.

    Elsewhere every tool folder is listed (macOS's profile allows only what it names, Homebrew's
    ``/usr/local`` included).
    """
    parts = path.parts
    return sys.platform.startswith("linux") and len(parts) >= 2 and \
        parts[1] in ("usr", "bin", "sbin", "lib", "lib64", "lib32")


__all__ = ["StageRunner", "producer_python"]
