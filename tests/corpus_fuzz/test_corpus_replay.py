"""Every saved input, replayed through its target's check: a bug the fuzz session found stays found.

Cases come from `nox -s fuzz` (failing inputs, shrunk) and from people (seeds
that once needed care). A case marked ``xfail`` is a known bug, reported and
not fixed yet: its replay is a strict xfail, so the fix shows up as XPASS and
the mark has to go.
"""

from __future__ import annotations

import base64
import datetime as _dt

import pytest
from property.corpus import REQUIRED_FIELDS, Case, load_cases
from property.runner import signature_of
from property.targets import TARGETS

CASES = load_cases()


class KnownBugReproducedError(Exception):
    """The case failed exactly as recorded; any other failure fails the replay outright."""


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, raises=KnownBugReproducedError, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.path.stem, marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_saved_input_holds_its_property(case: Case) -> None:
    target = TARGETS[case.target]
    try:
        target.check(target.decode(case.data))
    except Exception as exc:
        if case.xfail and signature_of(exc) == case.signature:
            raise KnownBugReproducedError(case.signature) from exc
        raise


def test_every_case_names_a_target_a_date_and_a_readable_input() -> None:
    assert CASES, "tests/corpus_fuzz/cases/ is empty: the seeds are missing"
    for case in CASES:
        missing = REQUIRED_FIELDS - case.data.keys()
        assert not missing, f"{case.path.name}: missing {sorted(missing)}"
        assert case.target in TARGETS, f"{case.path.name}: unknown target {case.target!r}"
        _dt.date.fromisoformat(case.data["found"])
        if "input_b64" in case.data:
            base64.b64decode(case.data["input_b64"], validate=True)
        TARGETS[case.target].decode(case.data)
        # A known bug is tolerated by the property runs only by its signature: it must have one.
        assert not case.xfail or case.signature, f"{case.path.name}: an xfail case needs its signature"
