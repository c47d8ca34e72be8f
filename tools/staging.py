"""A run's output written beside its destination and swapped in only when the run succeeded (standard library only).

The one copy lives in the package, ``qualify_files/_staging.py`` (what `qualify run` uses); it is loaded here by
path, not imported as ``desktop_qualify.qualify_files``, because this module serves scripts that may run where the
package is not installed, and importing the package would load pydantic with it. tools/github_offline.py stages
its output with it; a refused gate, a failed build, a kill or a full disk loses nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_NAME = "_desktop_qualify_staging"
_FILE = Path(__file__).resolve().parents[1] / "qualify_files" / "_staging.py"


def _load() -> object:
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(_NAME, _FILE)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_FILE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    spec.loader.exec_module(module)
    return module


_module = _load()
staging_folder = _module.staging_folder  # type: ignore[attr-defined]
swap_into_place = _module.swap_into_place  # type: ignore[attr-defined]

__all__ = ["staging_folder", "swap_into_place"]
