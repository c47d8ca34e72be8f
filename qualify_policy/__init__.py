"""The committed policy: what is trusted, what must be covered, what the limits are."""

from typing import TYPE_CHECKING

from desktop_qualify.qualify_lazy import lazy_attributes

from ._app import AppPolicy, InstallTarget
from ._load import Policy, host_arch, host_platform, load_policy
from ._model import PolicyFile, StepExpectation

if TYPE_CHECKING:
    from ._reference import render_policy_reference, undocumented_fields, write_policy_reference

# The field reference reads the models' source: for docs/policy.md and its drift test, never for a run.
__getattr__ = lazy_attributes(__name__, dict.fromkeys(
    ("render_policy_reference", "undocumented_fields", "write_policy_reference"), "._reference"))

__all__ = ["AppPolicy", "InstallTarget", "Policy", "PolicyFile", "StepExpectation", "host_arch", "host_platform",
           "load_policy", "render_policy_reference", "undocumented_fields", "write_policy_reference"]
