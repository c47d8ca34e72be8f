"""What one app stage may see and what it ran under: the contract every confinement adapter implements.

App-controlled code (the build command and every tool it runs, the ``[app.build] tools`` version commands,
the probe, the journey runner and all it starts, the update journey's state verbs, the build inside
``qualify rebuild``) runs only through an adapter of this interface (docs/design.md §3.11). An adapter
starts from nothing and binds in what the stage needs, as bubblewrap does, so a stage is described by what
it sees, never by what it is denied:

* ``writable``: the stage's own folders (the exported source, its output folder, its private HOME and TMPDIR);
* ``readable``: what it reads and may not change (the installed prefix, the build information file);
* ``toolchain``: the tools it runs, read-only (the producer's Python prefixes, the PATH entries);
* ``sockets``: local sockets it may connect to (a private Xvfb display);
* ``network``: whether it keeps the machine's network (the policy decides, per stage).

``protected`` names what must stay invisible whatever is bound: the checkout, the folders that hold private
keys, the producer's output folder. An adapter refuses to bind a path that is, or holds, a protected path.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import AppStage, ConfinementMechanism

# The stage, mechanism and layer names are the evidence's (one list, in evidence_schemas): an adapter reports
# only names the statement can carry.
Mechanism = ConfinementMechanism


@dataclass(frozen=True)
class StageSandbox:
    """What one run of app code may see (module docstring)."""

    stage: AppStage
    home: Path
    tmp: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    toolchain: tuple[Path, ...] = ()
    sockets: tuple[Path, ...] = ()
    network: bool = False
    protected: tuple[Path, ...] = ()
    # Where the command starts (inside a bound path); None: the adapter's default (the private HOME).
    cwd: Path | None = None


@dataclass(frozen=True)
class ConfinementFacts:
    """What a stage ran under, as the adapter observed it: the evidence's ``StageConfinement`` before signing."""

    stage: AppStage
    mechanism: Mechanism
    layers: tuple[str, ...]
    network: bool
    detail: str = ""


class ConfinementError(Exception):
    """The stage cannot be confined as asked (the tool is missing, the kernel refuses, a protected path)."""


@dataclass
class ConfinedCommand:
    """One command as the adapter starts it: the argv and environment to hand to ``run_bounded``.

    ``finish`` is called once the command and everything it started have ended (or been killed); it reads back
    what the adapter can observe of the confinement and sweeps anything left, and returns the facts.
    ``pass_fds`` are the file descriptors the wrapper needs (bubblewrap's info pipe), released by ``close``.
    """

    argv: list[str]
    env: dict[str, str]
    finish: Callable[[], ConfinementFacts]
    pass_fds: tuple[int, ...] = ()
    release: Callable[[], None] | None = field(default=None, repr=False)

    def close(self) -> None:
        """Release what the adapter held open for the command (idempotent)."""
        release, self.release = self.release, None
        if release is not None:
            release()


class Confinement(abc.ABC):
    """One platform's way of confining app code: it wraps a command so that it sees only its ``StageSandbox``."""

    mechanism: Mechanism

    @abc.abstractmethod
    def unavailable(self) -> str | None:
        """Why this adapter cannot confine on this machine (what to install or allow), or None when it can."""

    @abc.abstractmethod
    def wrap(self, argv: Sequence[str], sandbox: StageSandbox, env: Mapping[str, str]) -> ConfinedCommand:
        """The command that runs ``argv`` confined to ``sandbox`` with ``env``; raises ``ConfinementError``."""


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both resolved)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def sealed(sandbox: StageSandbox) -> tuple[Path, ...]:
    """The protected paths that hold none of the stage's given paths (the key folders, the runner's files).

    The others (the checkout or output folder holding the stage's own folders, a HOME holding the toolchain) are
    closed to the stage by what it is given, down to its own paths; an adapter that denies by name (macOS's
    profile) or checks permissions (the separate account, Windows' restricted token) does so on these.
    """
    given = (*sandbox.toolchain, *sandbox.readable, *sandbox.writable, *sandbox.sockets)
    return tuple(p for p in sandbox.protected if not any(inside(g, p) for g in given))


def exposes(path: Path, protected: Sequence[Path]) -> Path | None:
    """The first protected path that binding ``path`` would make visible (``path`` is it or holds it), or None."""
    for hidden in protected:
        if inside(hidden, path):
            return hidden
    return None
