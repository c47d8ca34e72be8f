"""A pytest plugin that writes a ``qualify-journey`` v2 record from a test session (docs/app-contract.md §4).

Registered through the ``pytest11`` entry point, so every pytest run that has
desktop-qualify installed loads it; it stays inert until ``--qualify-journey=PATH``
is given (the producer's ``{record}``). Then each test collected is one journey
step, and at the session's end the record is written to PATH, atomically:

* a test passes: the step is ``allow``; a test marked
  ``@pytest.mark.qualify_refusal(code="APP_CODE")`` passes: the step is
  ``reject`` with that code (the test itself asserts that the app refused with
  it, so the code is what was seen, not merely what was hoped for);
* a test fails or errors (in setup, call or teardown), or is an expected
  failure: the step is ``error`` with the failure's first line as its detail;
  it matches no expectation of the policy, so the verifier names the step;
* a skipped test is no step: a required step that was skipped is missing.

The step id is ``@pytest.mark.qualify_step("id")`` where given, else the test
function's name without ``test_`` (``test_save_note`` -> ``save-note``, a
parametrised test's id appended). What build ran is the app's word, given once
per session through the ``qualify_journey`` fixture's ``identify``; without it
no record is written and the session fails.

Once the record is written, a session whose only trouble was failing tests
exits 0: the contract's exit status says the journey ran to its end and wrote
its record, and the record's ``error`` steps carry the failures to the
verifier, which judges them against the policy.
"""

from ._plugin import JourneyIdentity, pytest_addoption, pytest_configure, qualify_journey

__all__ = ["JourneyIdentity", "pytest_addoption", "pytest_configure", "qualify_journey"]
