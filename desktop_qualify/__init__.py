"""desktop-qualify: release qualification for desktop applications.

One import namespace for the whole pipeline. The stages (``producer``,
``aggregate``, ``consumer``), the shared layers (``evidence_schemas``,
``qualify_policy``, ``qualify_trust``, ``qualify_verify``, ``qualify_github``,
``qualify_runtime``), the console scripts (``qualify_cli``,
``qualify_sigstore_conformance``) and the committed policies, trusted roots and
JSON Schemas (``policies``, ``schemas``, package data) all install under it.
In a checkout each lives in its own top-level folder; ``pyproject.toml`` maps
them here.
"""

import os as _os

# In a checkout this folder is ``<root>/desktop_qualify`` and the stages are its siblings (``<root>/producer``...),
# which pyproject's package-dir maps under this package. Run from the checkout's root (``python -m
# desktop_qualify.producer``), the current folder comes first on sys.path, so this folder is imported instead of the
# installed package (regular or editable) and would hide every mapped subpackage: the root joins ``__path__`` so
# that ``desktop_qualify.<folder>`` is ``<root>/<folder>``, as an editable install maps it. The installed package's
# parent (site-packages) holds no pyproject.toml beside a producer/ package, so nothing changes there.
# (os.path, not pathlib: every command imports this first, and pathlib's import would cost each one.)
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))  # noqa: PTH100, PTH120
if (_os.path.isfile(_os.path.join(_root, "pyproject.toml"))  # noqa: PTH113, PTH118
        and _os.path.isfile(_os.path.join(_root, "producer", "__init__.py"))  # noqa: PTH113, PTH118
        and _root not in __path__):
    __path__.append(_root)
del _root

# pydantic runs every installed plugin (entry point group "pydantic") around each validation. Evidence is
# validated with no code but ours and pydantic's observing or changing it, so plugins are off for this process,
# whatever the environment says; it also spares every command the entry-point scan (~35 ms of start-up).
_os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"

# The distribution's version (pyproject reads it from here): a decision records it without importlib.metadata,
# whose import alone costs a release gate tens of milliseconds.
__version__ = "0.1.0"

