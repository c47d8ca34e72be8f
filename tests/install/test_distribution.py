"""The distribution a team installs (issue 33 item 8): its metadata is pyproject's, and its sdist is complete.

Built offline from a copy of the project (no build isolation: the suite runs with the network cut), as
`nox -s build` builds it: the sdist, then a wheel from the unpacked sdist. A wheel built straight from the
source tree must be the same, file for file, so nothing a build needs is missing from the sdist; and the
wheel's METADATA and entry points must say what pyproject.toml says.
"""

from __future__ import annotations

import configparser
import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

import desktop_qualify

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
# What the distribution is built from: pyproject's package-dir folders and the files setuptools reads.
SOURCES = ("pyproject.toml", "README.md", *PYPROJECT["tool"]["setuptools"]["package-dir"].values())
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _run(*argv: str | Path, cwd: Path) -> None:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}:\n{done.stdout}\n{done.stderr}"


def _wheel(source: Path, dist: Path) -> Path:
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", dist, source,
         cwd=source.parent)
    [wheel] = dist.glob("desktop_qualify-*.whl")
    return wheel


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The sdist, the wheel built from the unpacked sdist, and the wheel built from the source tree."""
    work = tmp_path_factory.mktemp("distribution")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    # The PEP 517 hook itself, as `nox -s build` calls it: no `build` package is needed.
    _run(sys.executable, "-c", "import sys, setuptools.build_meta as b; b.build_sdist(sys.argv[1])", work / "sdist",
         cwd=source)
    [sdist] = (work / "sdist").glob("desktop_qualify-*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
    [unpacked] = (work / "unpacked").iterdir()
    return sdist, _wheel(unpacked, work / "from-sdist"), _wheel(source, work / "from-source")


def _files(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: hashlib.sha256(archive.read(name)).hexdigest() for name in archive.namelist()}


def _dist_info(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        [member] = [m for m in archive.namelist() if m.endswith(f".dist-info/{name}")]
        return archive.read(member).decode("utf-8")


def _metadata(wheel: Path) -> Message:
    return HeaderParser().parsestr(_dist_info(wheel, "METADATA"))


def _requirement(text: str, extra: str | None) -> tuple[str, frozenset[str], SpecifierSet, str | None]:
    parsed = Requirement(text)
    return canonicalize_name(parsed.name), frozenset(parsed.extras), parsed.specifier, extra


def test_the_sdist_builds_the_same_wheel_as_the_source_tree(built: tuple[Path, Path, Path]) -> None:
    sdist, from_sdist, from_source = built
    assert from_sdist.name == from_source.name == f"desktop_qualify-{desktop_qualify.__version__}-py3-none-any.whl"
    assert sdist.name == f"desktop_qualify-{desktop_qualify.__version__}.tar.gz"
    wanted, got = _files(from_source), _files(from_sdist)
    assert sorted(set(wanted) - set(got)) == [], "the sdist leaves out files the wheel needs"
    assert sorted(set(got) - set(wanted)) == []
    assert sorted(name for name in wanted if wanted[name] != got[name]) == []


def test_the_sdist_holds_the_sources_and_the_package_data(built: tuple[Path, Path, Path]) -> None:
    sdist, _, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    for needed in ("pyproject.toml", "README.md", "PKG-INFO", "desktop_qualify/__init__.py",
                   "desktop_qualify/py.typed", "policies/local.toml", "policies/release.toml",
                   "policies/sigstore/trusted_root.production.json", "schemas/platform-statement.schema.json",
                   "qualify_cli/_run.py", "qualify_files/_staging.py", "producer/confinement/__init__.py"):
        assert needed in names, needed


def test_the_wheel_metadata_is_pyprojects(built: tuple[Path, Path, Path]) -> None:
    _, wheel, _ = built
    meta = _metadata(wheel)
    assert meta["Name"] == PROJECT["name"]
    assert meta["Version"] == desktop_qualify.__version__  # pyproject's dynamic version reads it from there
    assert meta["Summary"] == PROJECT["description"]
    assert meta["Requires-Python"] == PROJECT["requires-python"]
    assert meta["Author"] == ", ".join(person["name"] for person in PROJECT["authors"])
    assert meta["Maintainer"] == ", ".join(person["name"] for person in PROJECT["maintainers"])
    assert meta.get_all("Classifier") == PROJECT["classifiers"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert set(meta.get_all("Provides-Extra") or []) == set(PROJECT["optional-dependencies"])
    expected = {_requirement(text, None) for text in PROJECT["dependencies"]}
    expected |= {_requirement(text, extra) for extra, texts in PROJECT["optional-dependencies"].items()
                 for text in texts}
    listed = set()
    for text in meta.get_all("Requires-Dist") or []:
        marker = Requirement(text).marker
        extra = _EXTRA.search(str(marker)) if marker is not None else None
        listed.add(_requirement(text, extra[1] if extra else None))
    assert listed == expected
    # Nothing the project does not publish: no home page or URL is claimed.
    assert meta.get_all("Project-URL") is None
    assert meta["Home-page"] is None


def test_the_wheel_entry_points_are_pyprojects(built: tuple[Path, Path, Path]) -> None:
    _, wheel, _ = built
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # script names are case-sensitive
    parser.read_string(_dist_info(wheel, "entry_points.txt"))
    groups = {section: {name: value.strip() for name, value in parser[section].items()}
              for section in parser.sections()}
    expected = {"console_scripts": PROJECT["scripts"], **PROJECT.get("entry-points", {})}
    assert groups == expected
    assert groups["console_scripts"]["qualify"] == "desktop_qualify.qualify_cli:main"
