"""Mutated signed evidence: verified, or rejected with stable codes; never accepted when certainly wrong."""

from __future__ import annotations

from .checks_verify import column_codes
from .runner import check_property, fuzzes
from .targets import TARGETS


@fuzzes
def test_verify_release_qualifies_or_gives_stable_reasons() -> None:
    check_property(TARGETS["verify"])


@fuzzes
def test_qualify_verify_exits_0_1_or_2_and_its_json_agrees() -> None:
    check_property(TARGETS["cli_verify"])


@fuzzes
def test_every_failing_cell_is_explained_by_a_reason_of_its_column() -> None:
    column_codes()  # skips, with the reason, until qualify_verify.COLUMN_CODES exists
    check_property(TARGETS["decision_table"])


@fuzzes
def test_odd_command_lines_exit_0_1_or_2_with_stable_codes() -> None:
    check_property(TARGETS["cli_args"])
