"""Bounded JSON, bounded reads, DSSE envelopes, statements and local signatures never fail unstably."""

from __future__ import annotations

from .runner import check_property, fuzzes
from .targets import TARGETS


@fuzzes
def test_load_json_returns_sound_json_or_refuses_with_a_json_code() -> None:
    check_property(TARGETS["load_json"])


@fuzzes
def test_read_bounded_returns_the_file_or_refuses_by_size_and_kind() -> None:
    check_property(TARGETS["read_bounded"])


@fuzzes
def test_parse_envelope_returns_the_envelope_or_refuses() -> None:
    check_property(TARGETS["parse_envelope"])


@fuzzes
def test_parse_statement_returns_the_model_of_its_predicate_type_or_refuses() -> None:
    check_property(TARGETS["parse_statement"])


@fuzzes
def test_local_signature_check_accepts_only_what_a_trusted_key_signed() -> None:
    check_property(TARGETS["verify_envelope"])
