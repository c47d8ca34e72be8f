"""The journey's fail-closed external-skill steps as data: one row per step, one loop to walk them.

A row names the package to build, what to do to it, how to run it and which
``CC_SKILL_*`` code the host must answer with. Which host, which ports and which
extra pass checks apply belong to the phase that walks a table (its runner), so
a row stays plain data and one loop serves every table.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost.host._runner import MAX_DURATION
from skillhost.journey._step import Step, _step, _write_skill

TIME_ONLY = ("runtime:time",)


@dataclass(frozen=True)
class Package:
    """A throw-away skill package. ``handler=None`` is prompt-only; ``signer`` names a key of the run
    (``None`` = unsigned, lock only); ``extra_md`` goes into the manifest verbatim (hostile fields)."""

    skill: str
    handler: str | None
    caps: tuple[str, ...] = TIME_ONLY
    signer: str | None = "good"
    extra_md: str = ""


# Alters a built, signed package before the host sees it; returns why it could not (no symlink right), else None.
Tamper = Callable[[Path], str | None]


@dataclass(frozen=True)
class RejectRow:
    """One fail-closed step: the expected outcome is always ``reject`` with ``code``."""

    sid: str
    package: Package
    code: str
    tamper: Tamper | None = None
    # Runs between discovery and verification: the window a digest-drift attack uses.
    mutate: Callable[[Path], None] | None = None
    max_duration: float = MAX_DURATION
    protocol_version: int | None = None  # the host speaks a version the worker does not
    abort_after: float | None = None  # the host cancels the run after this many seconds
    # Where the refusal must come from: ``False`` before any worker starts, ``True`` from a worker that ran.
    in_worker: bool | None = None


RowRunner = Callable[[RejectRow, Path], Step]


class PackageBuilder:
    """Writes packages under one root with the run's ephemeral keys."""

    def __init__(self, root: Path, keys: Mapping[str, Ed25519PrivateKey]) -> None:
        self.root, self.keys = root, keys
        self._built: dict[Package, Path] = {}

    def __call__(self, pkg: Package) -> Path:
        # The same spec yields the same folder, so a row can re-run the package an allow step built
        # (the protocol-mismatch row differs from its allow path only in the version the host speaks).
        if pkg not in self._built:
            key = None if pkg.signer is None else self.keys[pkg.signer]
            self._built[pkg] = _write_skill(self.root, pkg.skill, pkg.handler, pkg.caps, key, pkg.extra_md)
        return self._built[pkg]


def walk(rows: Iterable[RejectRow], build: Callable[[Package], Path], run: RowRunner) -> list[Step]:
    """Build, tamper and run each row in order; package building interleaves with the runs on purpose."""
    steps: list[Step] = []
    for row in rows:
        skill_dir = build(row.package)
        problem = row.tamper(skill_dir) if row.tamper else None
        if problem:
            # A tamper this platform cannot perform fails the step; it never skips it.
            steps.append(_step(row.sid, "reject", row.code, "allow", None, problem))
        else:
            steps.append(run(row, skill_dir))
    return steps


@contextmanager
def abort_timer(seconds: float | None) -> Iterator[threading.Event | None]:
    """A cancel event set ``seconds`` after entry (``None``: no event, the run is never cancelled)."""
    if seconds is None:
        yield None
        return
    cancel = threading.Event()
    timer = threading.Timer(seconds, cancel.set)
    timer.start()
    try:
        yield cancel
    finally:
        timer.cancel()
