"""Names a package exports but loads only when first used (PEP 562 module ``__getattr__``).

A leaf of its own: the packages that use it (the stages, ``evidence_schemas``)
sit on different layers, and none of them may pull another in for it.
"""

from ._lazy import lazy_attributes

__all__ = ["lazy_attributes"]
