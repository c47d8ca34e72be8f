"""qualify_verify/_update_outcome.py's ``assess_update``: the update stage's own words and codes (mutants that
survived the update corpus, which reads a row's codes but not every message): a step's problem carries the
update code unless the step is the previous release, a line is cut at 1,500 characters, the installer and
downgrade rule are named as the policy writes them, and a step's own ``passed`` is held to its facts by name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_verify import _update_outcome
from desktop_qualify.qualify_verify._update_outcome import UpdateFacts, assess_update


def _assess(monkeypatch: pytest.MonkeyPatch, *, steps: tuple[tuple[str, tuple[str, ...]], ...] = (),
            claims: dict[str, bool] | None = None, ran: tuple[str, str, str | None] = ("deb", "refuse", "NEWER"),
            policy: tuple[str, str, str | None] = ("deb", "refuse", "NEWER"),
            record: dict[str, object] | None = None) -> list[tuple[Code, str]]:
    rules = SimpleNamespace(installer=policy[0], downgrade=policy[1], downgrade_code=policy[2])
    facts = UpdateFacts(steps)
    monkeypatch.setattr(_update_outcome, "rules_for", lambda p, exp: rules)
    monkeypatch.setattr(_update_outcome, "update_facts", lambda u, r: facts)
    monkeypatch.setattr(_update_outcome, "step_claims", lambda u: claims or {})
    installer, downgrade, code = ran
    update = SimpleNamespace(installer=installer, downgrade=downgrade, downgrade_code=code,
                             failed_steps=list(facts.failed), passed=facts.passed)
    for field, value in (record or {}).items():
        setattr(update, field, value)
    outcome = assess_update(cast(Any, SimpleNamespace(update=update)), cast(Any, None))
    return [(problem.code, problem.message) for problem in outcome.problems]


def test_a_steps_problem_carries_the_update_code_and_the_previous_releases_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    said = _assess(monkeypatch, steps=(("previous-release", ("audited REJECTED",)),
                                       ("upgrade-install", ("install failed: x",))))
    assert said == [(Code.PREVIOUS_RELEASE_UNQUALIFIED, "previous-release: audited REJECTED"),
                    (Code.UPDATE_FAILED, "upgrade-install: install failed: x")]


def test_a_long_problem_is_cut_at_1500_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    (code, message), = _assess(monkeypatch, steps=(("upgrade-check", ("y" * 3000,)),))
    assert code == Code.UPDATE_FAILED
    assert message == ("upgrade-check: " + "y" * 3000)[:1500]


def test_another_installer_or_downgrade_rule_names_both_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _assess(monkeypatch, ran=("archive", "allow", None))
    assert said == [(Code.UPDATE_FAILED, "the journey ran with installer archive and downgrade rule allow ; the "
                                         "policy's are deb and refuse NEWER")]
    said = _assess(monkeypatch, ran=("deb", "refuse", "NEWER"), policy=("deb", "allow", None))
    assert said == [(Code.UPDATE_FAILED, "the journey ran with installer deb and downgrade rule refuse NEWER; the "
                                         "policy's are deb and allow ")]


def test_a_steps_own_passed_is_held_to_its_facts_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _assess(monkeypatch, steps=(("upgrade-install", ("install failed: x",)),),
                   claims={"upgrade-install": True, "write-state": True})
    assert (Code.UPDATE_FAILED, "the update record contradicts itself: upgrade-install.passed is True, its facts "
                                "give False") in said
    assert not [message for _, message in said if "write-state" in message]  # its claim agrees with its facts


def test_the_records_failed_steps_and_passed_are_held_to_the_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _assess(monkeypatch, steps=(("upgrade-install", ("install failed: x",)),),
                   record={"failed_steps": [], "passed": True})
    assert said[1:] == [
        (Code.UPDATE_FAILED, "the update record contradicts itself: failed_steps is (), its facts give "
                             "('upgrade-install',)"),
        (Code.UPDATE_FAILED, "the update record contradicts itself: passed is True, its facts give False")]
