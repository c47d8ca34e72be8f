"""Every property target by name: the property tests and the corpus replay share this registry."""

from __future__ import annotations

from . import checks_cli, checks_parsing, checks_policy, checks_verify
from .target import Target

TARGETS: dict[str, Target] = {target.name: target for module in (checks_parsing, checks_policy, checks_verify,
                                                                 checks_cli) for target in module.TARGETS}
