"""The tools the probe, journey and state commands name by placeholder, resolved once on the producer's machine.

A policy says ``{node}`` or ``{python}``, never a machine's path: ``[app.toolchains]`` maps a placeholder to an
executable name (looked up on the producer's ``PATH``, as ``shutil.which`` does) or to an absolute path, and
``{python}``, unless named there, is the producer's own interpreter. Each is resolved here once, before any app
code runs, and refused (``QE_TOOLCHAIN_UNAVAILABLE``, exit 2) when it is missing, is not a regular executable
file, lies in the producer's output folder (where app stages write), or when its folder would show a protected
path (the checkout, the key folders, HOME) to the stage it is bound into. What it resolved to, the file's
SHA-256 and its version go into the platform evidence (``ToolchainRecord``); the commands in the records keep
their placeholders.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError, ToolchainRecord
from desktop_qualify.qualify_files import file_sha256

from .confinement import StageRunner, exposes, inside, producer_python
from .processes import excerpt, minimal_environment

PRODUCER_PYTHON = "{python}"
_VERSION_TIMEOUT = 30
_MAX_PATH = 1024
# The folder names that hold an install's executables: the tool's prefix is the folder above (Windows' venvs
# use Scripts).
_BIN_FOLDERS = frozenset({"bin", "sbin", "Scripts"})


@dataclass(frozen=True)
class Toolchain:
    """One resolved tool: what the policy asked for, the path substituted, the file that runs, its digest."""

    name: str
    requested: str
    path: Path
    resolved: Path
    sha256: str
    folders: tuple[Path, ...]


@dataclass(frozen=True)
class Toolchains:
    """The job's resolved tools, in the policy's order (``{python}`` first when the producer's is used)."""

    chosen: tuple[Toolchain, ...] = ()

    def values(self) -> dict[str, str]:
        """Placeholder name -> the path substituted for it."""
        return {tool.name: str(tool.path) for tool in self.chosen}

    def folders(self) -> tuple[Path, ...]:
        """Every folder bound read-only for them, once each."""
        return tuple(dict.fromkeys(folder for tool in self.chosen for folder in tool.folders))


def _refuse(name: str, why: str) -> QualificationError:
    return QualificationError(Code.TOOLCHAIN_UNAVAILABLE, f"toolchain {{{name}}}: {why}",
                              hint="name an executable on the producer's PATH, or its absolute path, in "
                                   "[app.toolchains]")


def install_prefix(executable: Path) -> Path:
    """The folder a tool's install lives in: above ``bin``/``Scripts`` (``/opt/node/bin/node`` -> ``/opt/node``),
    else the executable's own folder."""
    folder = executable.parent
    return folder.parent if folder.name in _BIN_FOLDERS and folder.parent != folder else folder


def _find(name: str, requested: str, path_variable: str | None) -> Path:
    if requested == PRODUCER_PYTHON:
        return Path(producer_python())
    found = requested if "/" in requested or "\\" in requested else shutil.which(requested, path=path_variable or "")
    if found is None:
        raise _refuse(name, f"{requested!r} is not on the producer's PATH")
    path = Path(found)
    if not path.is_absolute():
        # A relative PATH entry would make the tool depend on the folder the producer was started in.
        raise _refuse(name, f"{requested!r} was found at {found}, a relative path")
    # Normalised, not resolved: ``..`` segments would not resolve inside a sandbox, and a venv's link must stay.
    return Path(os.path.normpath(path))


def resolve_one(name: str, requested: str, *, path_variable: str | None, protected: Sequence[Path],
                out: Path) -> Toolchain:
    """Resolve ``requested`` for placeholder ``name``; refused with ``QE_TOOLCHAIN_UNAVAILABLE``."""
    path = _find(name, requested, path_variable)
    try:
        resolved = path.resolve(strict=True)
        mode = resolved.stat().st_mode
    except (OSError, RuntimeError) as exc:
        raise _refuse(name, f"{path} does not exist or cannot be read ({getattr(exc, 'strerror', None) or exc})") \
            from exc
    if not stat.S_ISREG(mode) or not os.access(resolved, os.X_OK):
        raise _refuse(name, f"{path} is not a regular executable file")
    if len(str(path)) > _MAX_PATH or len(str(resolved)) > _MAX_PATH:
        raise _refuse(name, f"{str(path)[:80]}... is longer than {_MAX_PATH} characters")
    for candidate in (path, resolved):
        if inside(candidate, out):
            # The output folder holds what app stages wrote (the build's output, the installed tree).
            raise _refuse(name, f"{candidate} lies in the producer's output folder {out}")
    folders = tuple(dict.fromkeys((install_prefix(path), install_prefix(resolved))))
    for folder in folders:
        shown = exposes(folder, protected)
        if shown is not None:
            raise _refuse(name, f"binding its folder {folder} would show {shown} to app code")
    return Toolchain(name, requested, path, resolved, file_sha256(resolved), folders)


def resolve_toolchains(named: Mapping[str, str], commands: Sequence[Sequence[str]], *, path_variable: str | None,
                       protected: Sequence[Path], out: Path) -> Toolchains:
    """The policy's ``[app.toolchains]``, and ``{python}`` when ``commands`` use it and the policy names none."""
    wanted = dict(named)
    if "python" not in wanted and any("{python}" in item for argv in commands for item in argv):
        wanted = {"python": PRODUCER_PYTHON, **wanted}
    return Toolchains(tuple(resolve_one(name, requested, path_variable=path_variable, protected=protected,
                                        out=out.resolve()) for name, requested in wanted.items()))


def version_argv(tool: Toolchain) -> list[str]:
    """The command that asks ``tool`` for its version: the substituted path, ``--version``, nothing else."""
    return [str(tool.path), "--version"]


def query_versions(toolchains: Toolchains, runner: StageRunner, work: Path) -> list[ToolchainRecord]:
    """Ask each tool its version, confined, and return the records for the platform evidence.

    The query runs the toolchain, not the app, but it runs confined all the same, as the probe stage (the first
    stage that runs it): the tool may come from a folder the app's own dependencies filled (a virtual
    environment, ``node_modules/.bin``), and a process the producer starts unconfined would see the keys and the
    environment. So it gets what the probe will: its folders read-only, a fresh HOME, no network, the minimal
    environment, 30 s, 4 KiB of output.
    """
    records = []
    for tool in toolchains.chosen:
        home = work / f"toolchain-{tool.name}"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        try:
            sandbox = runner.sandbox("probe", home=home, tmp=home, writable=[home],
                                     toolchain=runner.toolchain(extra=tool.folders))
            result = runner.run(version_argv(tool), sandbox, timeout=_VERSION_TIMEOUT,
                                env=minimal_environment(home), stdout_cap=4096, stderr_cap=4096)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        # Some tools print their version on stderr (Python 2, java): the first line of either.
        text = (result.stdout or result.stderr).decode("utf-8", errors="replace").strip()
        line = text.splitlines()[0].strip() if text else ""
        if result.timed_out or result.exit_code != 0 or not line:
            why = "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise _refuse(tool.name, f"{' '.join(version_argv(tool))} failed ({why}): {excerpt(result.stderr, 300)}")
        records.append(ToolchainRecord(name=tool.name, requested=tool.requested, path=str(tool.path),
                                       resolved=str(tool.resolved), sha256=tool.sha256, version=line[:200],
                                       folders=[str(folder) for folder in tool.folders]))
    return records


__all__ = ["PRODUCER_PYTHON", "Toolchain", "Toolchains", "install_prefix", "query_versions", "resolve_one",
           "resolve_toolchains", "version_argv"]
