"""The journey's fail-closed external-skill steps as data: one row per step, one loop to walk them.

A row names the package to build, what to do to it, how to run it and which
``CC_SKILL_*`` code the host must answer with. Which host, which ports and which
extra pass checks apply belong to the phase that walks a table (its runner), so
a row stays plain data and one loop serves every table.

A step's data goes forward through the journey's modules: a phase declares
its rows; here the builder writes (and signs) each package and a tamper alters
it; the phase's runner runs it (``_on_host`` for a ``SkillHost``); the outcome
becomes a step record (``_step``), which nothing after it reads back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost.host import MAX_DURATION
from skillhost.journey._step import Step, _step
from skillhost.packaging import LOCK_NAME, SIG_NAME, build_lock, read_package, sign_lock, sign_package

TIME_ONLY = ("runtime:time",)

GREETER_MD = """---
id: {id}
name: Greeter
execution-capabilities:
{caps}
{extra}---

External test skill written by the skill host journey.
"""


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


def _try_symlink(link: Path, target: Path) -> str | None:
    """Create ``link``; return why not where the platform or user lacks the right (the step then fails)."""
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError) as exc:
        return f"could not create a symlink here: {exc.__class__.__name__}"
    return None


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


def _caps_yaml(caps: Iterable[str]) -> str:
    return "\n".join(f"  - {c}" for c in caps)


def _write_skill(  # noqa: PLR0917
    root: Path,
    skill_id: str,
    handler: str | None,
    caps: Iterable[str],
    key: Ed25519PrivateKey | None = None,
    extra_md: str = "",
) -> Path:
    """Write (and sign, given a key) a flat skill package; ``handler=None`` makes it prompt-only."""
    d = root / skill_id
    d.mkdir()
    md = GREETER_MD.format(id=skill_id, caps=_caps_yaml(caps), extra=extra_md)
    (d / "SKILL.md").write_text(md, encoding="utf-8", newline="\n")
    if handler is not None:
        (d / "handler.py").write_text(handler, encoding="utf-8", newline="\n")
    if key is not None and extra_md:
        # sign_package refuses invalid manifests; a hostile publisher signs whatever it likes.
        _, files, _ = read_package(d)
        lock = build_lock(skill_id, files)
        (d / LOCK_NAME).write_bytes(json.dumps(lock, sort_keys=True).encode())
        (d / SIG_NAME).write_bytes(json.dumps(sign_lock(key, lock), sort_keys=True).encode())
    elif key is not None:
        sign_package(d, key)
    else:
        _, files, _ = read_package(d)
        (d / ".skill-lock.json").write_bytes(json.dumps(build_lock(skill_id, files), sort_keys=True).encode())
    return d


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
