"""The committed policy: what is trusted, what must be covered, what the limits are."""

from ._app import AppPolicy, InstallTarget
from ._load import Policy, host_arch, host_platform, load_policy
from ._model import PolicyFile, StepExpectation
from ._reference import render_policy_reference, undocumented_fields, write_policy_reference

__all__ = ["AppPolicy", "InstallTarget", "Policy", "PolicyFile", "StepExpectation", "host_arch", "host_platform",
           "load_policy", "render_policy_reference", "undocumented_fields", "write_policy_reference"]
