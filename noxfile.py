"""Sessions (`nox -s NAME`; `nox` alone runs tests):

- tests: the test suite, the end-to-end chains included, with the network cut.
- lint: ruff, the docstring check, mypy --strict on the installed package and the apps, zizmor.
- schemas: regenerate the committed JSON Schemas from the models.
- qualify: `qualify run`, the whole local chain on this machine's platform, into qualification-out/.
- qualify-update: the local chain with the update journey from the last qualify run (qualification-out-update/).
- qualify-example: the local chain on the second example app, examples/qt-notes (qualification-out-example/).
- build: the sdist and the wheel built from it into dist/; the wheel installed from its file in a fresh venv and run.
- bench: the benchmarks against their named baselines; writes bench.json.
- fuzz: the property tests under the fuzz profile for a wall-clock budget.
- qualify-github-offline: the GitHub-mode chain offline (loopback emulator, test Sigstore instance).
- qualify-team-offline: a team's repository calling this project's reusable workflows at a tag, offline.
- interop: sigstore-js verifies the offline GitHub chain's bundles.
- workflow-dry-run: the release workflows' own qualify commands, run here under the local policy.
- mutants: mutmut on the trust-critical packages in a scratch copy; writes tests/mutation/report.json.

`nox -s qualify` is the README's main job: build, sign, install, launch and
exercise the reference app on this machine's platform, sign and aggregate the
evidence, and end with the consumer's decision.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/ holds the standard-library helpers below
from tools.staging import staging_folder, swap_into_place

nox.options.sessions = ["tests"]
# Environments are reused: an editable install is skipped while its inputs are unchanged (_install_once), and a
# regular one is rebuilt by pip every time. `nox --reuse-venv=never` starts every environment afresh.
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
OUT = ROOT / "qualification-out"
LOCAL_POLICY = "policies/local.toml"
EXAMPLE_POLICY = "examples/qt-notes/policy.toml"
EXAMPLE_OUT = ROOT / "qualification-out-example"
UPDATE_POLICY = "policies/local-update.toml"
UPDATE_OUT = ROOT / "qualification-out-update"


# What an editable install of the project depends on: the dependencies and the build's package map (pyproject),
# the locks, and the version the distribution's metadata records. The source itself is read in place.
_INSTALL_INPUTS = ("pyproject.toml", "requirements/*.txt", "requirements/*.in", "desktop_qualify/__init__.py")


def _install_key(args: tuple[str, ...]) -> str:
    digest = hashlib.sha256("\0".join(args).encode())
    for pattern in _INSTALL_INPUTS:
        for path in sorted(ROOT.glob(pattern)):
            digest.update(f"\0{path.relative_to(ROOT).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _install_once(session: nox.Session, *args: str) -> None:
    """``session.install(*args)``, skipped when the reused environment already holds exactly this install.

    A rerun spends no time on pip unless the dependencies changed; the install is editable (``-e``), so the
    code it runs is always the checkout's. ``nox --reuse-venv=never`` forces a fresh environment.
    """
    location = getattr(session.virtualenv, "location", None)
    stamp = Path(location) / ".desktop-qualify-install.sha256" if location else None
    key = _install_key(args)
    if stamp is not None and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == key:
        session.log("reusing the environment: the dependencies are unchanged since its install")
        return
    # The first install is the longest silent step of a first run (about 40 s here): say so before, and how long after.
    session.log("installing the environment's dependencies (first run, or they changed): about a minute; "
                "later runs reuse it")
    started = time.monotonic()
    session.install(*args)
    session.log(f"dependencies installed in {time.monotonic() - started:.0f} s")
    if stamp is not None:
        stamp.write_text(key + "\n", encoding="utf-8")


def _network_cut() -> list[str]:
    """A prefix that runs a command with no network but loopback, where the machine allows it.

    Tests never touch the network; running them in an empty network namespace
    proves it (sigstore-python's habit: markers kept honest by `unshare --net`).
    """
    if not sys.platform.startswith("linux") or not (shutil.which("unshare") and shutil.which("ip")):
        return []
    probe = subprocess.run(["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True, check=False)
    if probe.returncode != 0:
        return []
    return ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"']


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite, including the end-to-end chain on the real PyInstaller bundle, with the network cut."""
    # The example app's toolkit too: the suite qualifies it end to end, with the network cut.
    _install_once(session, "-e", ".[dev,example]")
    prefix = _network_cut()
    session.log("running the tests with no network but loopback" if prefix else
                "no network namespace available here: running the tests with the network up")
    # Exit 5 means pytest collected nothing: say so loudly instead of passing silently.
    code = session.run(*prefix, "pytest", *session.posargs, success_codes=[0, 5], external=True)
    if code == 5:
        session.error("pytest collected no tests")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff with a broad rule set, mypy --strict with the pydantic plugin, zizmor on the workflows."""
    # A regular (not editable) install: mypy follows no import hook, so it reads the package the way the wheel
    # lays it out (desktop_qualify/<folder>), from outside the checkout, whose top-level folders it would see first.
    session.install(".[dev,example]")
    session.run("ruff", "check", ".")
    # ruff's D1 rules count a private module's names as private: the names each package exports from one are
    # followed to their definitions here (standard library only), so every exported name has a docstring.
    session.run("python", "tools/check_docstrings.py")
    with session.chdir(session.create_tmp()):
        session.run("mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "desktop_qualify")
    # The reference app is not an installed package: check it from its own folder. Bundled
    # handlers are loaded by path and the catalog audit forbids their imports (typing included).
    with session.chdir("reference_app"):
        session.run("mypy", "--strict", "--python-version", "3.11", "--exclude", "skillhost/bundled_skills/",
                    "skillhost", "tools", "skillhost_launcher.py")
    # The example app, with its toolkit's own type stubs (PySide6 ships them).
    with session.chdir("examples/qt-notes"):
        session.run("mypy", "--strict", "--python-version", "3.11", "qt_notes", "build.py", "journey/run.py")
    if (ROOT / ".github" / "workflows").is_dir():
        session.install("zizmor>=1.30,<2")
        session.run("zizmor", "--offline", ".github/workflows")


@nox.session
def schemas(session: nox.Session) -> None:
    """Regenerate the committed JSON Schemas from the models."""
    _install_once(session, "-e", ".")
    session.run("qualify", "schemas", "--out", "schemas")


def _git_out(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _requires_clean_worktree(policy: str) -> bool:
    """The policy's ``[source] require_clean_worktree`` (read with tomllib; the producer validates the rest)."""
    try:
        with (ROOT / policy).open("rb") as handle:
            source = tomllib.load(handle).get("source", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False  # the producer itself reports the unreadable policy (QE_POLICY_INVALID)
    return isinstance(source, dict) and source.get("require_clean_worktree") is True


def _source_gate_preconditions(policy: str = LOCAL_POLICY) -> str | None:
    """What the source gate will refuse, found before a minute of installing: None when a run can pass it."""
    top = _git_out("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != ROOT.resolve():
        return f"{ROOT} is not the top of a git work tree; the local chain builds from a git checkout"
    ref = _git_out("symbolic-ref", "-q", "HEAD")
    if ref != "refs/heads/main":
        return f"the checkout is on {ref or 'a detached HEAD'}, not on branch main; run 'git checkout main' first"
    head, main = _git_out("rev-parse", "--verify", "HEAD^{commit}"), _git_out("rev-parse", "--verify",
                                                                            "refs/heads/main^{commit}")
    if head is None or head != main:
        return "HEAD is not at main's head"
    # As the gate reads it: changes to tracked files only, so git-ignored outputs and untracked files do not count.
    if _requires_clean_worktree(policy):
        status = _git_out("status", "--porcelain", "--untracked-files=no")
        if status is None or status:
            lines = (status or "").splitlines()
            changed = ", ".join(line.split(maxsplit=1)[-1] for line in lines[:5]) or "git status failed"
            return (f"QE_WORKTREE_DIRTY: the work tree has uncommitted changes to tracked files ({changed}) and "
                    f"{policy} requires a clean tree; commit them first")
    return None


def _ensure_bubblewrap(session: nox.Session) -> None:
    """The local policies confine app code in bubblewrap on Linux: install it where this machine can.

    As root with apt-get (a fresh CI machine), Debian's package is installed; elsewhere the producer stops
    with QE_CONFINEMENT_UNAVAILABLE and says what to install, before any app code runs.
    """
    if not sys.platform.startswith("linux") or shutil.which("bwrap") or not shutil.which("apt-get") or \
            os.geteuid() != 0:
        return
    session.log("installing bubblewrap (Debian's package): the app's build, probe and journey run confined in it")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "bubblewrap"]):
        if subprocess.run(argv, env=env, check=False, stdout=subprocess.DEVNULL).returncode != 0:
            session.warn("bubblewrap could not be installed: the producer will say what is missing")
            return


def _local_chain(session: nox.Session, policy: str, out: Path, install: tuple[str, ...] = ("-e", "."),
                 run_extra: tuple[str, ...] = ()) -> None:
    """`qualify run --policy POLICY --out OUT`: keygen, produce, aggregate, verify and verify-vsa, swapped into OUT.

    The chain itself is `qualify run`'s, the command a team runs in its own repository; the session adds what
    only this checkout needs: the source gate's cheap preconditions checked before a minute of installing,
    the editable install, and bubblewrap. A failed run loses nothing: `qualify run` replaces ``out`` (the last
    good output) only once the new run is QUALIFIED, and leaves a failed run's output in ``.OUT.staging``.
    """
    refused = _source_gate_preconditions(policy)
    if refused is not None:
        code = "" if refused.startswith("QE_") else "QE_SOURCE_GATE_FAILED: "
        session.error(f"{code}{refused} (nothing installed; {out.name} left as it was)")
    _install_once(session, *install)
    _ensure_bubblewrap(session)
    session.run("qualify", "run", "--policy", policy, "--out", str(out), *run_extra)


@nox.session(reuse_venv=True)
def qualify(session: nox.Session) -> None:
    """The full local qualification on this machine's platform (local Ed25519 keys)."""
    _local_chain(session, LOCAL_POLICY, OUT)


@nox.session(name="qualify-update", reuse_venv=True)
def qualify_update(session: nox.Session) -> None:
    """The local chain with the update journey (policies/local-update.toml), from the last `nox -s qualify`.

    The previous release is qualification-out: bundled here as an auditor receives it, then audited by the
    producer, installed, given user state, upgraded to this commit's build, rolled back and downgraded.
    """
    artifacts = sorted((OUT / "artifacts").glob("*")) if (OUT / "artifacts").is_dir() else []
    if len(artifacts) != 1 or not (OUT / "evidence").is_dir():
        session.error(f"{OUT.name} holds no qualified run with one artifact: run `nox -s qualify` first")
    _install_once(session, "-e", ".")
    previous = Path(session.create_tmp()) / "previous"
    shutil.rmtree(previous, ignore_errors=True)
    previous.mkdir()
    bundle, artifact = previous / "previous.qualify-bundle.zip", previous / artifacts[0].name
    # Copies: the previous release must not change under the job when qualification-out is replaced.
    shutil.copyfile(artifacts[0], artifact)
    session.run("qualify", "bundle", "--policy", LOCAL_POLICY, "--evidence", str(OUT / "evidence"), "--out",
                str(bundle))
    _local_chain(session, UPDATE_POLICY, UPDATE_OUT,
                 run_extra=("--previous-bundle", str(bundle), "--previous-artifact", str(artifact)))


@nox.session(name="qualify-example", reuse_venv=True)
def qualify_example(session: nox.Session) -> None:
    """The same local chain on the second example app (examples/qt-notes): a Qt GUI, its own build, a .deb.

    Linux only (a Debian package); needs dpkg-deb and Xvfb (Debian: apt-get install xvfb).
    """
    _local_chain(session, EXAMPLE_POLICY, EXAMPLE_OUT, install=("-e", ".[example]"))


DIST = ROOT / "dist"


@nox.session
def build(session: nox.Session) -> None:
    """The distribution a team installs: the sdist, the wheel built from it, both into dist/; then a smoke check.

    The wheel is built from the unpacked sdist, not from the checkout, as `python -m build` does: a file the
    sdist leaves out is then missing from the wheel too, and the smoke check finds it. The wheel is installed
    from its file, with its dependencies, into a fresh virtual environment, where `qualify --version` must name
    this version and `qualify schemas --check` must find the shipped schemas equal to the models. dist/ is
    replaced only once both files passed (staged beside it), so a failed build leaves the last one in place.
    """
    # The build backend the sdist names, pinned as pyproject's [build-system] pins it; no build isolation, so
    # what builds the distribution is exactly this.
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    session.install(*requires)
    work = Path(session.create_tmp()) / "build"
    shutil.rmtree(work, ignore_errors=True)
    built = work / "dist"
    built.mkdir(parents=True)
    session.run("python", "-c", "import sys, setuptools.build_meta as b; b.build_sdist(sys.argv[1])", str(built))
    [sdist] = built.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "sdist", filter="data")
    [unpacked] = (work / "sdist").iterdir()
    session.run("python", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(built),
                str(unpacked))
    [wheel] = built.glob("*.whl")
    venv = work / "venv"
    session.run("python", "-m", "venv", str(venv))
    bindir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    session.run(str(bindir / "python"), "-m", "pip", "install", "--quiet", str(wheel), external=True)
    version = session.run(str(bindir / "qualify"), "--version", external=True, silent=True)
    expected = f"qualify {wheel.name.split('-')[1]}"
    if not isinstance(version, str) or version.strip() != expected:
        session.error(f"the installed wheel says {version!r}, not {expected!r}")
    session.run(str(bindir / "qualify"), "schemas", "--check", external=True)
    staging = staging_folder(DIST)
    shutil.copytree(built, staging)
    swap_into_place(staging, DIST)
    session.log(f"built {DIST / sdist.name} and {DIST / wheel.name}; `pip install {DIST / wheel.name}` installs it")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: ratios against named baselines, each line "target met" or "target MISSED"; writes bench.json.

    Benchmarks are not tests: a missed target is reported, not failed (exit 0); only a benchmark that
    could not run exits 1. Needs ~2.2 GiB free in the temporary folder for the 1 GiB digest figure.
    `nox -s bench -- rerun` runs only the named figures (the names are in benchmarks/bench_evidence.py).
    """
    # nox itself: the rerun figure runs `nox -s qualify` twice in a scratch clone.
    _install_once(session, "-e", ".", "nox>=2025.5.1")
    session.run("python", "benchmarks/bench_evidence.py", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """The property tests under the "fuzz" Hypothesis profile, for a wall-clock budget (default 10 minutes).

    `nox -s fuzz -- --minutes 2` (or QUALIFY_FUZZ_MINUTES=2) sets the budget; other arguments go to pytest.
    Each failing input found is saved under tests/corpus_fuzz/cases/, which the default run replays.
    """
    _install_once(session, "-e", ".[dev]")
    minutes = os.environ.get("QUALIFY_FUZZ_MINUTES", "10")
    pytest_args: list[str] = []
    args = iter(session.posargs)
    for arg in args:
        if arg == "--minutes":
            minutes = next(args, "")
        elif arg.startswith("--minutes="):
            minutes = arg.partition("=")[2]
        else:
            pytest_args.append(arg)
    try:
        seconds = round(float(minutes) * 60)
    except (ValueError, OverflowError):
        session.error(f"--minutes {minutes!r} is not a number of minutes")
    if seconds <= 0:
        session.error("--minutes must be positive")
    prefix = _network_cut()
    session.log(f"fuzzing for {seconds} s" + ("" if prefix else " (no network namespace here: network up)"))
    # The budget reaches the tests through the environment; tests/property/runner.py shares it out.
    session.run(*prefix, "pytest", "tests/property", "-q", *pytest_args,
                env={"QUALIFY_FUZZ_SECONDS": str(seconds)}, external=True)


GITHUB_OUT = ROOT / "qualification-out-github"


@nox.session(name="qualify-github-offline")
def qualify_github_offline(session: nox.Session) -> None:
    """The whole GitHub-mode chain offline: loopback GitHub emulator, test Sigstore instance, real producer."""
    # The example app's toolkit too: the suite qualifies it end to end, with the network cut.
    _install_once(session, "-e", ".[dev,example]")
    prefix = _network_cut()
    session.log("running with no network but loopback" if prefix else
                "no network namespace available here: running with the network up (nothing reaches it)")
    python = str(Path(session.bin) / "python")  # the session's python, also inside the network namespace
    session.run(*prefix, python, "tools/github_offline.py", "--out", str(GITHUB_OUT), *session.posargs,
                external=True)


TEAM_OUT = ROOT / "qualification-out-team"


@nox.session(name="qualify-team-offline")
def qualify_team_offline(session: nox.Session) -> None:
    """A team's repository calling this project's reusable workflows at a tag, in GitHub mode, offline."""
    # The team's app is the second example app (Qt Notes: PySide6, dpkg-deb, Xvfb), confined like any other.
    _install_once(session, "-e", ".[dev,example]")
    _ensure_bubblewrap(session)
    prefix = _network_cut()
    session.log("running with no network but loopback" if prefix else
                "no network namespace available here: running with the network up (nothing reaches it)")
    python = str(Path(session.bin) / "python")  # the session's python, also inside the network namespace
    session.run(*prefix, python, "tools/team_offline.py", "--out", str(TEAM_OUT), *session.posargs, external=True)


@nox.session
def interop(session: nox.Session) -> None:
    """sigstore-js (pinned in tools/interop/) verifies the offline GitHub chain's bundles under the same root."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        session.skip(f"sigstore-js interop needs node and npm: {'node' if node is None else 'npm'} is not on PATH")
    evidence = GITHUB_OUT / "evidence"
    if not any(evidence.glob("*.sigstore.json")) or not (GITHUB_OUT / "signer-identity.json").is_file():
        session.log("no offline GitHub evidence yet: running qualify-github-offline first")
        _install_once(session, "-e", ".[dev]")
        session.run("python", "tools/github_offline.py", "--out", str(GITHUB_OUT))
    work = Path(session.create_tmp()) / "sigstore-js"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in ("package.json", "package-lock.json", "verify.mjs"):
        shutil.copyfile(ROOT / "tools" / "interop" / name, work / name)
    with session.chdir(work):
        session.run(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", external=True)
    # npm needed the registry; the verification itself needs nothing but the files: cut the network for it.
    session.run(*_network_cut(), node, str(work / "verify.mjs"),
                "--trusted-root", str(GITHUB_OUT / "trusted_root.json"),
                "--identity", str(GITHUB_OUT / "signer-identity.json"),
                "--foreign-root", str(ROOT / "policies" / "sigstore" / "trusted_root.production.json"),
                *sorted(str(p) for p in evidence.glob("*.sigstore.json")),
                # The gate's Verification Summary Attestations, signed as release-gate.yml called by release.yml.
                *sorted(str(p) for p in (GITHUB_OUT / "summaries").glob("*.sigstore.json")), external=True)


@nox.session(name="workflow-dry-run")
def workflow_dry_run(session: nox.Session) -> None:
    """The workflow jobs' own `qualify` commands, read from the YAML, run in order here under the local policy."""
    session.install(".", "pyyaml>=6.0.2,<7")
    session.run("python", "tools/workflow_dry_run.py", *session.posargs)


@nox.session
def mutants(session: nox.Session) -> None:
    """mutmut over the trust-critical packages (pyproject's [tool.mutmut]), in a scratch copy of the working tree.

    `nox -s mutants -- qualify_trust` (or consumer._anchor, ...) mutates one package; with no argument, every
    package the configuration names (hours on 2 cores: docs/mutation.md). The checkout is never written; the
    figures go to tests/mutation/report.json, whose survivors docs/mutation.md lists.
    """
    _install_once(session, "-e", ".[dev]")
    scratch = Path(session.create_tmp()) / "mutants-tree"
    session.run("python", "tests/mutation/mutants.py", "--scratch", str(scratch), *session.posargs)
