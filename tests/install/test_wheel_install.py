"""The wheel stands on its own: one namespace, the trust data inside it, no checkout beside it (issue 8).

The wheel is built offline from a copy of the project, installed with no
dependencies into a fresh virtual environment in a temporary folder (the
dependencies come from this test environment's site-packages through a
``.pth`` line, since the suite runs with the network cut), and its console
scripts run from a folder outside any checkout.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from support.conformance_cases import CASES, UPSTREAM_EXCEPTIONS, artifact_of, case_folders, must_fail, verify_argv

import desktop_qualify

REPO = Path(__file__).resolve().parents[2]
# What the distribution is built from: pyproject's package-dir folders and the files setuptools reads.
SOURCES = ("pyproject.toml", "README.md",
           *tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(*argv: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600,
                          check=check)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built offline from a copy of the project (so no build/ folder lands in the checkout)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    dist = work / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", dist, source,
         cwd=work)
    return next(dist.glob("desktop_qualify-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the wheel; returns its bin folder."""
    work = tmp_path_factory.mktemp("venv")
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    bindir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    python = bindir / ("python.exe" if sys.platform == "win32" else "python")
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=work)
                .stdout.strip())
    # Dependencies only (pydantic, cryptography, sigstore, ...): this environment's site-packages, whose own
    # .pth files (the editable install of this checkout among them) are not processed from here.
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel, cwd=work)
    return bindir


def test_every_listed_package_has_its_folder_mapped() -> None:
    """The wheel lists each mapped folder and each package inside one (the producer's subpackages), no more.

    setuptools installs only the packages listed: a subpackage left out would be missing from a regular install
    while an editable one still finds it.
    """
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped: dict[str, str] = setuptools["package-dir"]
    assert all((REPO / folder / "__init__.py").is_file() for folder in mapped.values())
    inside = {".".join([package, *init.parent.relative_to(REPO / folder).parts])
              for package, folder in mapped.items()
              for init in (REPO / folder).rglob("__init__.py") if init.parent != REPO / folder}
    assert set(setuptools["packages"]) == set(mapped) | inside


def test_the_wheel_installs_one_namespace_with_its_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"desktop_qualify"}
    for data in ("desktop_qualify/policies/release.toml", "desktop_qualify/policies/local.toml",
                 "desktop_qualify/policies/sigstore/trusted_root.production.json",
                 "desktop_qualify/schemas/platform-statement.schema.json", "desktop_qualify/py.typed"):
        assert data in names


def test_qualify_help_runs_outside_a_checkout(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "qualify", "--help", cwd=tmp_path)
    assert "produce" in done.stdout
    assert "verify" in done.stdout


def test_qualify_version_is_the_wheels(installed: Path, tmp_path: Path) -> None:

    version = desktop_qualify.__version__  # pyproject's dynamic version reads it from there
    done = _run(installed / "qualify", "--version", cwd=tmp_path)
    assert done.stdout == f"qualify {version}\n"


def test_a_release_policy_copied_out_of_git_finds_the_shipped_trusted_root(installed: Path, tmp_path: Path) -> None:
    """With no checkout beside it, the root the policy pins by digest comes from the installed package."""
    policy = tmp_path / "release-as-of-the-run.toml"
    policy.write_bytes((REPO / "policies" / "release.toml").read_bytes())
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    done = _run(installed / "qualify", "audit", "--policy", str(policy), "--evidence", str(evidence), cwd=tmp_path,
                check=False)
    assert done.returncode == 1, done.stderr
    assert "QE_POLICY_INVALID" not in done.stdout + done.stderr
    assert "QE_EVIDENCE_MISSING" in done.stdout


def test_shipped_schemas_match_the_models(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "qualify", "schemas", "--check", cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr


def test_the_installed_modules_come_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    python = installed / ("python.exe" if sys.platform == "win32" else "python")
    done = _run(python, "-c", "import json, desktop_qualify.producer as p; print(json.dumps(p.__file__))",
                cwd=tmp_path)
    assert str(REPO) not in json.loads(done.stdout)


def test_every_conformance_case_gives_the_suites_verdict_through_the_installed_client(installed: Path,
                                                                                     tmp_path: Path) -> None:
    """The whole bundle-verify suite (140 calls), one client process per call as the conformance action runs it.

    The pinned production root ships in the wheel: cases without a trusted_root.json use it. Only the
    upstream exceptions may disagree, and they must (so a fixed upstream shows up here).
    """
    cases = case_folders()
    if not cases:
        pytest.skip(f"conformance vectors not present at {CASES}")
    client = installed / "qualify-sigstore-conformance"

    # Each case twice, as the suite runs it: the artifact as a file, and as the protocol's sha256:DIGEST.
    calls = [(case, form) for case in cases
             for form in (str(artifact_of(case)), f"sha256:{_sha256(artifact_of(case))}")]

    def verdict(call: tuple[Path, str]) -> tuple[Path, subprocess.CompletedProcess[str]]:
        case, artifact = call
        return case, _run(client, *verify_argv(case, artifact), cwd=tmp_path, check=False)

    wrong, crashed = [], []
    # Two cores: two clients at a time halves the suite's wall time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for case, done in pool.map(verdict, calls):
            if "Traceback" in done.stderr or "QE_INTERNAL" in done.stderr:
                crashed.append(f"{case.name}: {done.stderr[-300:]}")
            refused = done.returncode != 0
            if refused is not must_fail(case) and case.name not in UPSTREAM_EXCEPTIONS:
                wrong.append(f"{case.name}: exit {done.returncode} {done.stderr.strip()[-200:]}")
            if case.name in UPSTREAM_EXCEPTIONS and refused is must_fail(case):
                wrong.append(f"{case.name}: an upstream exception now passes; drop it from UPSTREAM_EXCEPTIONS")
    assert not crashed, crashed
    assert not wrong, wrong
    assert len(cases) >= 70


# Every documented `python -m desktop_qualify.<stage>` (docs/cli.md, docs/design.md §7) and the console scripts.
_MODULE_ENTRY_POINTS = ("producer", "aggregate", "consumer", "qualify_cli", "qualify_sigstore_conformance")
_SCRIPTS = ("qualify", "qualify-sigstore-conformance")


def _entry_points_run_from_the_root(bindir: Path, root: Path) -> list[str]:
    """Each entry point's ``--help`` run with the checkout's root as the current folder: what fails."""
    python = bindir / ("python.exe" if sys.platform == "win32" else "python")
    env = {"PATH": str(bindir), "PYTHONDONTWRITEBYTECODE": "1", "SYSTEMROOT": os.environ.get("SYSTEMROOT", "")}
    runs = [[str(python), "-m", f"desktop_qualify.{stage}", "--help"] for stage in _MODULE_ENTRY_POINTS]
    runs += [[str(bindir / script), "--help"] for script in _SCRIPTS]
    failed = []
    for argv in runs:
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=120, check=False, env=env)
        if done.returncode != 0 or "usage:" not in done.stdout:
            failed.append(f"{' '.join(argv[1:] if argv[0] == str(python) else argv)}: exit {done.returncode} "
                          f"{done.stderr.strip()[-300:]}")
    return failed


def test_every_entry_point_runs_from_the_checkouts_root_after_a_regular_install(wheel: Path,
                                                                              installed: Path) -> None:
    """The checkout's desktop_qualify/ comes first on sys.path there, and must not hide the mapped stages."""
    root = wheel.parent.parent / "source"  # the copy the wheel was built from: a checkout's root, laid out as one
    assert (root / "desktop_qualify" / "__init__.py").is_file()
    assert not (root / "desktop_qualify" / "producer").exists()
    assert _entry_points_run_from_the_root(installed, root) == []


def test_every_entry_point_runs_from_the_checkouts_root_after_an_editable_install(wheel: Path,
                                                                                tmp_path: Path) -> None:
    root = wheel.parent.parent / "source"
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    bindir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    python = bindir / ("python.exe" if sys.platform == "win32" else "python")
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path)
                .stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--no-build-isolation", "-e", root, cwd=tmp_path)
    assert _entry_points_run_from_the_root(bindir, root) == []
    # And from elsewhere: the editable install maps every stage to the checkout's folder.
    done = _run(python, "-c", "import json, desktop_qualify.producer as p; print(json.dumps(p.__file__))",
                cwd=tmp_path)
    assert json.loads(done.stdout) == str(root / "producer" / "__init__.py")


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("git") is None,
                    reason="the local chain runs this machine's platform; the example's policy names linux")
def test_init_example_then_run_qualifies_with_only_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    """Issue 33's "Done when": in a fresh repository outside this checkout, `qualify init --example` and then
    `qualify run`, with the installed wheel's own console script (no checkout, no editable install), end QUALIFIED."""
    repo = tmp_path / "team-notes"
    repo.mkdir()
    git = ["git", "-C", str(repo)]
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "team@example.invalid"],
                 ["config", "user.name", "team"]):
        _run(*git, *args, cwd=tmp_path)
    qualify = installed / "qualify"
    done = subprocess.run([str(qualify), "init", "--example"], cwd=repo, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    _run(*git, "add", "-A", cwd=tmp_path)
    _run(*git, "commit", "-q", "-m", "qualify init --example", cwd=tmp_path)
    # The console script's own interpreter runs every step (no PATH entry of this test environment's).
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{installed}{os.pathsep}/usr/bin{os.pathsep}/bin"
    done = subprocess.run([str(qualify), "run", "--policy", "policies/qualify.toml", "--out", str(tmp_path / "out")],
                          cwd=repo, capture_output=True, text=True, timeout=300, check=False, env=env)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "Traceback" not in said
    decision = json.loads((tmp_path / "out" / "decision.json").read_text(encoding="utf-8"))
    assert decision["decision"] == "QUALIFIED"
    assert str(REPO) not in json.dumps(decision)  # nothing read from this checkout
