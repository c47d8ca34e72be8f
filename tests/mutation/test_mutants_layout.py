"""The harness's scratch copy: the shared Sigstore vectors are where the tests look for them, and a run's test
selection is the one asked for (docs/mutation.md)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from mutation import mutants

_PYPROJECT = """\
[tool.setuptools.package-dir]
desktop_qualify = "desktop_qualify"
"desktop_qualify.lib" = "lib"

[tool.mutmut]
pytest_add_cli_args_test_selection = ["tests/unit", "tests/corpus"]
pytest_add_cli_args = ["-p", "no:cacheprovider"]
"""


def _checkout(root: Path) -> Path:
    checkout = root / "project"
    (checkout / "lib").mkdir(parents=True)
    (checkout / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (checkout / "pyproject.toml").write_text(_PYPROJECT, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    return checkout


@pytest.mark.skipif(shutil.which("git") is None, reason="the scratch copy is listed by git ls-files: no git here")
def test_the_tests_in_the_scratch_copy_find_the_shared_vectors_beside_the_checkout(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    (tmp_path / "shared" / "vectors").mkdir(parents=True)
    scratch = tmp_path / "scratch"
    mutants.prepare(scratch, checkout)
    # mutmut runs the tests in scratch/mutants: REPO/../shared/vectors from there is the checkout's neighbour.
    assert (scratch / "mutants" / ".." / "shared" / "vectors").resolve() == (tmp_path / "shared" / "vectors").resolve()
    also_copy = tomllib.loads((scratch / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]["also_copy"]
    assert "shared" not in also_copy  # linked, never copied into mutmut's tree


@pytest.mark.skipif(shutil.which("git") is None, reason="the scratch copy is listed by git ls-files: no git here")
def test_without_shared_vectors_the_scratch_copy_links_nothing(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    mutants.prepare(scratch, _checkout(tmp_path))
    assert not (scratch / "shared").exists()
    assert not (scratch / "shared").is_symlink()


def test_a_run_s_test_selection_replaces_the_fast_set_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(_PYPROJECT, encoding="utf-8")
    mutants.select_tests(tmp_path, ["tests/sigstore", "tests/unit/test_x.py"])
    config = tomllib.loads((tmp_path / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    assert config["pytest_add_cli_args_test_selection"] == ["tests/sigstore", "tests/unit/test_x.py"]
    assert config["pytest_add_cli_args"] == ["-p", "no:cacheprovider"]


def test_a_configuration_without_its_one_selection_line_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.mutmut]\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="holds 0 'pytest_add_cli_args_test_selection ='"):
        mutants.select_tests(tmp_path, ["tests/unit"])


def test_a_run_without_a_worker_is_refused_before_any_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        mutants.main(["--scratch", str(tmp_path / "scratch"), "--max-children", "0", "qualify_trust"])
    assert caught.value.code == 2
    assert "--max-children 0: mutmut needs at least one worker" in capsys.readouterr().err
    assert not (tmp_path / "scratch").exists()
