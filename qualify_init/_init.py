"""`qualify init`: check every target first, validate the policy, then write all the files or none."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import write_atomic
from desktop_qualify.qualify_policy import load_policy

from ._render import DISPLAYS, EXAMPLE_KINDS, INSTALLER_KINDS, JOURNEYS, POLICY_PATH, Choices, render

_APP_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")


def repository_root(start: Path) -> Path:
    """The git work tree holding ``start``: init writes into a team's repository, nowhere else."""
    try:
        done = subprocess.run(["git", "-C", str(start), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise QualificationError(Code.ENVIRONMENT, f"git cannot be run ({exc})") from exc
    if done.returncode != 0 or not done.stdout.strip():
        raise QualificationError(Code.USAGE, f"{start} is not inside a git work tree; qualify init writes into a "
                                             "repository", hint="run it in your repository, or 'git init' first")
    return Path(done.stdout.strip()).resolve()


def default_name(root: Path) -> str:
    """The repository folder's name as an app name (lower case, dashes), or ``app`` when nothing of it fits."""
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]", "-", root.name.lower())).strip("-")[:32].strip("-")
    return slug if _APP_NAME.fullmatch(slug) else "app"


def _ask(question: str, options: tuple[str, ...], default: str, read: Callable[[str], str]) -> str:
    while True:
        answer = read(f"{question} [{'/'.join(options)}] ({default}): ").strip() or default
        if answer in options:
            return answer
        print(f"  one of {', '.join(options)}", file=sys.stderr)


def choose(*, root: Path, name: str | None, kind: str | None, display: str | None, journey: str | None,
           example: bool, upstream: str | None, interactive: bool,
           read: Callable[[str], str] = input) -> Choices:
    """The choices: flags first; what no flag gave is asked on a terminal, else the default."""
    if interactive:
        kinds = EXAMPLE_KINDS if example else INSTALLER_KINDS
        journeys = tuple(j for j in JOURNEYS if not (example and j == "playwright"))
        kind = kind or _ask("installer kind", kinds, "archive", read)
        display = display or _ask("display", DISPLAYS, "none", read)
        journey = journey or _ask("journey style", journeys, "app", read)
    chosen = Choices(name=name or default_name(root), kind=kind or "archive", display=display or "none",
                     journey=journey or "app", example=example, **({"upstream": upstream} if upstream else {}))
    if not _APP_NAME.fullmatch(chosen.name):
        raise QualificationError(Code.USAGE, f"--name {chosen.name!r}: an app name is ^[a-z][a-z0-9-]{{0,31}}$")
    if not _REPOSITORY.fullmatch(chosen.upstream):
        raise QualificationError(Code.USAGE, f"--upstream {chosen.upstream!r} is not OWNER/REPO")
    if example and chosen.kind not in EXAMPLE_KINDS:
        raise QualificationError(Code.USAGE, f"--example builds {' or '.join(EXAMPLE_KINDS)} only, not "
                                             f"{chosen.kind!r}: its build is a zipapp packed by Python or dpkg-deb")
    if example and chosen.journey == "playwright":
        raise QualificationError(Code.USAGE, "--example --journey playwright: the example app has no window for "
                                             "Playwright to drive; use --journey app or pytest")
    return chosen


def _validate_policy(text: str, root: Path) -> None:
    """The rendered policy loads as the producer will load it (a bug here must not reach a team's repository)."""
    with tempfile.TemporaryDirectory(prefix="qualify-init-") as scratch:
        path = Path(scratch) / "policies" / "qualify.toml"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        try:
            load_policy(path, root)
        except QualificationError as exc:
            raise QualificationError(Code.INTERNAL, f"qualify init rendered a policy that does not load: "
                                                    f"{exc.diagnostics()}") from exc


def write_all(root: Path, files: dict[str, str]) -> list[Path]:
    """Write every file, or none: an existing path refuses the whole init before anything is written."""
    targets = {root / relative: text for relative, text in files.items()}
    existing = [path for path in targets if path.exists() or path.is_symlink()]
    if existing:
        names = ", ".join(str(path.relative_to(root)) for path in existing)
        raise QualificationError(Code.USAGE, f"qualify init never overwrites a file: {names} already exist(s); "
                                             "nothing was written",
                                 hint="move them aside, or write by hand what init would have written "
                                      "(docs/adopt.md)")
    made_folders: list[Path] = []
    written: list[Path] = []
    try:
        for path, text in targets.items():
            missing = [folder for folder in [path.parent, *path.parent.parents]
                       if folder.is_relative_to(root) and not folder.exists()]
            made_folders.extend(reversed(missing))
            write_atomic(path, text.encode("utf-8"), mode=0o755 if path.name == "build.py" else 0o644)
            written.append(path)
    except BaseException:
        # All or nothing: a write that fails half-way takes back what it wrote, files first, then new folders.
        for path in reversed(written):
            path.unlink(missing_ok=True)
        for folder in reversed(made_folders):
            with contextlib.suppress(OSError):  # a folder someone else filled meanwhile stays
                folder.rmdir()
        raise
    return written


def init(*, start: Path, name: str | None, kind: str | None, display: str | None, journey: str | None,
         example: bool, upstream: str | None, interactive: bool | None = None) -> list[str]:
    """Run `qualify init` in the repository holding ``start``; the lines to print."""
    root = repository_root(start)
    chosen = choose(root=root, name=name, kind=kind, display=display, journey=journey, example=example,
                    upstream=upstream, interactive=sys.stdin.isatty() if interactive is None else interactive)
    files = render(chosen)
    _validate_policy(files[POLICY_PATH], root)
    written = write_all(root, files)
    lines = [f"wrote {path.relative_to(root).as_posix()}" for path in written]
    lines += [f"app {chosen.name}: installer {chosen.kind}, display {chosen.display}, journey {chosen.journey}",
              "next: commit these files on main, then run "
              f"'qualify run --policy {POLICY_PATH}' (or keygen, produce, aggregate, verify: docs/adopt.md)"]
    if example:
        lines.append("the example app qualifies unchanged; replace app/ with your own app when it does")
    return lines
