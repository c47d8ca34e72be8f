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

# pydantic runs every installed plugin (entry point group "pydantic") around each validation. Evidence is
# validated with no code but ours and pydantic's observing or changing it, so plugins are off for this process,
# whatever the environment says; it also spares every command the entry-point scan (~35 ms of start-up).
_os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"

# The distribution's version (pyproject reads it from here): a decision records it without importlib.metadata,
# whose import alone costs a release gate tens of milliseconds.
__version__ = "0.1.0"

