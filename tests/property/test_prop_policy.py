"""A policy file of any bytes loads or is refused as a usage error (exit 2), also through `qualify verify`."""

from __future__ import annotations

from .runner import check_property, fuzzes
from .targets import TARGETS


@fuzzes
def test_load_policy_loads_or_refuses_with_a_usage_code() -> None:
    check_property(TARGETS["load_policy"])


@fuzzes
def test_qualify_verify_with_a_mutated_policy_exits_0_1_or_2_with_stable_codes() -> None:
    check_property(TARGETS["cli_policy"])
