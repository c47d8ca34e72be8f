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

# The distribution's version (pyproject reads it from here): a decision records it without importlib.metadata,
# whose import alone costs a release gate tens of milliseconds.
__version__ = "0.1.0"

