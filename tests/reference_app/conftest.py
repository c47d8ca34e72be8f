"""Test setup for the reference skill host (tests/reference_app only)."""

import shutil
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
APP_DIR = _HERE.parents[1] / "reference_app"
for _p in (str(APP_DIR), str(_HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)


@pytest.fixture
def app_copy(tmp_path):
    """A private copy of the skillhost package and tools (for drift tests)."""
    dst = tmp_path / "app"
    shutil.copytree(APP_DIR / "skillhost", dst / "skillhost", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(APP_DIR / "tools", dst / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    return dst
