"""The stable codes and the one error type every stage raises.

A leaf: it imports nothing of the project, so every layer (the pure data of
``evidence_schemas``, the run-time helpers of ``qualify_runtime``, the stages)
can raise and catch the same error without importing one another, and a
command's ``--help`` pays for an enum, not for pydantic.
"""

from ._errors import Code, QualificationError

__all__ = ["Code", "QualificationError"]
