"""tests/adopt: `qualify init`, the journey plugins, and adopting the pipeline from a team's own repository.

``pytester`` (enabled in pyproject's addopts) runs the plugin's tests as real pytest sessions in a temporary folder.
``installed`` is desktop-qualify as a team gets it, a regular (not editable) install of the wheel: the journey
runs confined, and an editable install's modules live in this checkout, which the confined stage cannot see.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md",
           *tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())
# What the confined stages of an adopting team's run never need: the example's Qt, the linters, the build tools.
_NOT_COPIED = ("pyside6", "shiboken6", "mypy", "__mypyc", "virtualenv", "hypothesis", "nox", "ruff", "pyinstaller",
               "_pyinstaller", "altgraph", "__editable__", "desktop_qualify", "torch", "setuptools", "pip")


def _run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600, check=True)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel installed regularly, its dependencies copied in (the suite runs offline); its bin."""
    work = tmp_path_factory.mktemp("installed")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w",
         work / "dist", source, cwd=work)
    wheel = next((work / "dist").glob("desktop_qualify-*.whl"))
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=work)
                .stdout.strip())
    # Copied, not a .pth line to this environment's site-packages: the confined journey sees the venv alone.
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if entry.name.lower().startswith(_NOT_COPIED) or entry.name == "__pycache__":
            continue
        if entry.is_dir():
            shutil.copytree(entry, site / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, site / entry.name)
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel, cwd=work)
    return venv / "bin"
