"""Evidence verification shared by the aggregate job and the consumer.

The checks are one function each, named after what they prove; see
``_verifier`` for the order they run in.
"""

from ._evidence_dir import aggregate_file_name
from ._expectations import Expectations
from ._findings import Findings
from ._platform_checks import VerifiedPlatform
from ._verifier import Verdict, verify_platform_set, verify_release

__all__ = [
    "Expectations",
    "Findings",
    "Verdict",
    "VerifiedPlatform",
    "aggregate_file_name",
    "verify_platform_set",
    "verify_release",
]
