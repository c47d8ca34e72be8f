"""`qualify init`: check every target first, validate the policy, then write all the files or none."""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from desktop_qualify.evidence_schemas import PLATFORMS, Code, QualificationError
from desktop_qualify.qualify_files import write_atomic
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust.team_workflows import TEAM_RELEASE_PATH, caller_workflow

from ._render import (
    DISPLAYS,
    EXAMPLE_KINDS,
    INSTALLER_KINDS,
    JOURNEYS,
    POLICY_PATH,
    RELEASE_POLICY_PATH,
    TAG,
    TRUSTED_ROOT_PATH,
    UPSTREAM,
    WORKFLOW_PATH,
    Choices,
    app_sections,
    platforms,
    release_policy,
    render,
    trusted_root,
)

_APP_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
# origin's URL on github.com, https or ssh (scp-like or ssh://), with or without .git: OWNER and NAME.
_GITHUB_REMOTE = re.compile(r"^(?:https://(?:[^@/]+@)?github\.com/|ssh://git@github\.com(?::22)?/|git@github\.com:)"
                            r"([A-Za-z0-9_.-]{1,100})/([A-Za-z0-9_.-]{1,100}?)(?:\.git)?/?$")
# A caller line of the workflow: uses: OWNER/REPO/.github/workflows/FILE@TAG
_USES = re.compile(r"^\s*uses:\s*([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/\.github/workflows/[A-Za-z0-9_.-]+@(\S+)")
#: what `--only` can write on its own
ONLY = ("release-policy",)


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


def _validate_policy(text: str, root: Path, relative: str = POLICY_PATH, *, code: Code = Code.INTERNAL) -> None:
    """The rendered policy loads as the producer will load it (a bug here must not reach a team's repository)."""
    with tempfile.TemporaryDirectory(prefix="qualify-init-") as scratch:
        path = Path(scratch) / relative
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        try:
            load_policy(path, root)
        except QualificationError as exc:
            raise QualificationError(code, f"qualify init rendered a policy that does not load: "
                                           f"{exc.diagnostics()}") from exc


def origin_repository(root: Path) -> str | None:
    """OWNER/NAME of the remote ``origin`` when it is a github.com URL (https or ssh), else None: never a guess."""
    try:
        done = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _GITHUB_REMOTE.fullmatch(done.stdout.strip()) if done.returncode == 0 else None
    if match is None or match.group(2) in {".", ".."}:
        return None
    return f"{match.group(1)}/{match.group(2)}"


def team_repository(root: Path, flag: str | None, *, interactive: bool,
                    read: Callable[[str], str] = input) -> str | None:
    """The team's OWNER/NAME: ``--repository``, else origin's on github.com, else asked on a terminal; else None."""
    if flag is not None:
        if not _REPOSITORY.fullmatch(flag):
            raise QualificationError(Code.USAGE, f"--repository {flag[:120]!r} is not OWNER/NAME",
                                     hint="the team's GitHub repository, e.g. --repository acme/notes")
        return flag
    found = origin_repository(root)
    if found is not None or not interactive:
        return found
    while True:
        answer = read("GitHub repository OWNER/NAME for policies/release.toml (empty: do not write it): ").strip()
        if not answer or _REPOSITORY.fullmatch(answer):
            return answer or None
        print("  OWNER/NAME, e.g. acme/notes", file=sys.stderr)


def _caller(root: Path, upstream: str | None) -> tuple[str, str]:
    """(upstream, tag) the committed caller workflow calls, which the release policy must pin; else this version's."""
    path = root / WORKFLOW_PATH
    if not path.is_file():
        return upstream or UPSTREAM, TAG
    calls = {(m.group(1), m.group(2)) for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
             if (m := _USES.match(line))}
    if len(calls) != 1:
        raise QualificationError(Code.USAGE, f"{WORKFLOW_PATH} calls {len(calls)} different repositories or tags; "
                                             "the release policy pins exactly one", hint="one tag on every line")
    (called, tag), = calls
    if upstream is not None and upstream != called:
        raise QualificationError(Code.USAGE, f"--upstream {upstream} but {WORKFLOW_PATH} calls {called}")
    return called, tag


def release_files(*, name: str, local: str, platforms: list[str], repository: str, upstream: str,
                  tag: str) -> dict[str, str]:
    """policies/release.toml, the trusted root it pins (beside it) and the release gate's caller workflow
    (.github/workflows/release.yml, calling ``upstream``'s release gate at ``tag``, as qualify.yml calls its
    producers); the release policy loads before any is written."""
    sections = app_sections(local, platforms)
    if sections is None:
        raise QualificationError(Code.USAGE, f"{POLICY_PATH} has no [source] section: the release policy takes "
                                             "the app's sections from it", hint="write it by hand (docs/adopt.md)")
    root_text = trusted_root()
    text = release_policy(name=name, sections=sections, repository=repository, upstream=upstream, tag=tag,
                          root_sha256=hashlib.sha256(root_text.encode("utf-8")).hexdigest())
    return {RELEASE_POLICY_PATH: text, TRUSTED_ROOT_PATH: root_text,
            TEAM_RELEASE_PATH: caller_workflow(tag, TEAM_RELEASE_PATH, builder=upstream)}


_NOT_WRITTEN = (f"{RELEASE_POLICY_PATH} not written: no --repository, and origin is not a github.com URL; write it "
                f"with 'qualify init --only release-policy --repository OWNER/NAME'")


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


def init_release_policy(*, root: Path, repository: str | None, upstream: str | None, interactive: bool) -> list[str]:
    """`qualify init --only release-policy`: the release policy (and its trusted root) for an init done before,
    its app sections from the committed local policy, its tag and upstream from the committed caller workflow."""
    if upstream is not None and not _REPOSITORY.fullmatch(upstream):
        raise QualificationError(Code.USAGE, f"--upstream {upstream!r} is not OWNER/REPO")
    local_path = root / POLICY_PATH
    if not local_path.is_file():
        raise QualificationError(Code.USAGE, f"--only release-policy takes the app from {POLICY_PATH}, which is "
                                             "missing", hint="run 'qualify init' first")
    local = load_policy(local_path, root)
    if local.sigstore is not None:
        raise QualificationError(Code.USAGE, f"{POLICY_PATH} is not a local policy")
    team = team_repository(root, repository, interactive=interactive)
    if team is None:
        raise QualificationError(Code.USAGE, "--only release-policy needs the team's GitHub repository",
                                 hint="--repository OWNER/NAME")
    called, tag = _caller(root, upstream)
    files = release_files(name=local.file.name, local=local_path.read_text(encoding="utf-8"),
                          platforms=[p for p in PLATFORMS if not local.file.app.missing_for(p)],
                          repository=team, upstream=called, tag=tag)
    _validate_policy(files[RELEASE_POLICY_PATH], root, RELEASE_POLICY_PATH, code=Code.USAGE)
    kept = _keep_own_release_caller(root, files, called, tag)
    written = write_all(root, files)
    return [*(f"wrote {path.relative_to(root).as_posix()}" for path in written),
            f"release policy for {team}: {called}'s workflows at {tag}", *kept]


def _keep_own_release_caller(root: Path, files: dict[str, str], upstream: str, tag: str) -> list[str]:
    """Drop release.yml from ``files`` when the team has one (a common name): it is kept, never refused nor
    overwritten, and the line returned says what the gate's caller there must call."""
    path = root / TEAM_RELEASE_PATH
    if not (path.exists() or path.is_symlink()):
        return []
    del files[TEAM_RELEASE_PATH]
    return [f"kept {TEAM_RELEASE_PATH} (it exists): the release gate's caller must call "
            f"{upstream}/.github/workflows/release-gate.yml@{tag} from that path (the policy's [verifier] caller)"]


def init(*, start: Path, name: str | None, kind: str | None, display: str | None, journey: str | None,
         example: bool, upstream: str | None, interactive: bool | None = None, repository: str | None = None,
         only: str | None = None, read: Callable[[str], str] = input) -> list[str]:
    """Run `qualify init` in the repository holding ``start``; the lines to print."""
    root = repository_root(start)
    asking = sys.stdin.isatty() if interactive is None else interactive
    if only is not None:
        if only not in ONLY:
            raise QualificationError(Code.USAGE, f"--only {only[:40]!r}: one of {', '.join(ONLY)}")
        given = [flag for flag, value in (("--name", name), ("--kind", kind), ("--display", display),
                                          ("--journey", journey), ("--example", example or None)) if value]
        if given:
            raise QualificationError(Code.USAGE, f"--only release-policy takes the app from {POLICY_PATH}, not "
                                                 f"from {', '.join(given)}")
        return init_release_policy(root=root, repository=repository, upstream=upstream, interactive=asking)
    chosen = choose(root=root, name=name, kind=kind, display=display, journey=journey, example=example,
                    upstream=upstream, interactive=asking, read=read)
    files = render(chosen)
    _validate_policy(files[POLICY_PATH], root)
    team = team_repository(root, repository, interactive=asking, read=read)
    kept: list[str] = []
    if team is not None:
        files.update(release_files(name=chosen.name, local=files[POLICY_PATH], platforms=platforms(chosen),
                                   repository=team, upstream=chosen.upstream, tag=TAG))
        _validate_policy(files[RELEASE_POLICY_PATH], root, RELEASE_POLICY_PATH)
        kept = _keep_own_release_caller(root, files, chosen.upstream, TAG)
    written = write_all(root, files)
    lines = [f"wrote {path.relative_to(root).as_posix()}" for path in written]
    if team is None:
        lines.append(_NOT_WRITTEN)
    else:
        lines += [f"release policy for {team}: {chosen.upstream}'s workflows at {TAG}", *kept]
    lines += [f"app {chosen.name}: installer {chosen.kind}, display {chosen.display}, journey {chosen.journey}",
              "next: commit these files on main, then run "
              f"'qualify run --policy {POLICY_PATH}' (or keygen, produce, aggregate, verify: docs/adopt.md)"]
    if example:
        lines.append("the example app qualifies unchanged; replace app/ with your own app when it does")
    return lines
