"""Evidence verification shared by the aggregate job and the consumer.

The checks are one function each, named after what they prove; see
``_verifier`` for the order they run in.
"""

from ._candidate import CandidateError, stable_sha256
from ._columns import COLUMN_CODES
from ._confinement_checks import confinement_problems, required_layers, stages_that_ran
from ._evidence_dir import EvidenceFiles
from ._expectations import Expectations
from ._findings import Findings
from ._outcomes import JourneyFacts, ProbeFacts, journey_facts, platform_journey_facts, probe_facts
from ._platform_checks import VerifiedPlatform
from ._provenance_checks import VerifiedProvenance
from ._run_checks import RunRef, VerifiedAggregate
from ._update_outcome import UpdateFacts, UpdateRules, rules_for, step_claims, update_facts
from ._verifier import EvidenceSource, Verdict, verify_platform_set, verify_release

__all__ = [
    "confinement_problems",
    "required_layers",
    "stages_that_ran",
    "UpdateFacts",
    "UpdateRules",
    "rules_for",
    "step_claims",
    "update_facts",
    "CandidateError",
    "COLUMN_CODES",
    "EvidenceFiles",
    "EvidenceSource",
    "JourneyFacts",
    "ProbeFacts",
    "Expectations",
    "Findings",
    "RunRef",
    "Verdict",
    "VerifiedAggregate",
    "VerifiedPlatform",
    "VerifiedProvenance",
    "verify_platform_set",
    "journey_facts",
    "platform_journey_facts",
    "probe_facts",
    "stable_sha256",
    "verify_release",
]
