"""Which app stages ran, re-derived from the statement, and the exact reasons an entry's layers are refused
(docs/verifier.md).

Written for the mutants of ``qualify_verify._confinement_checks`` that the other tests let through
(docs/mutation.md): a statement carrying an update journey must count ``update`` among the stages that ran, so
that its confinement entry is required and no other stage name stands in for it; and an entry with several
foreign layers, or without several required ones, is refused with one reason that names each of them, separated
by ", ", in the entry's (foreign) or the policy's (missing) order, as an auditor reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import Expectations, stages_that_ran, verify_release
from support.confinement import confined, require_confinement
from support.evidence_factory import PlatformSpec, PredicateEdit, make_evidence
from support.update_evidence import evidence


def test_an_update_journey_is_a_stage_that_ran(tmp_path: Path) -> None:
    ev = evidence(tmp_path)
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    assert predicate.update is not None
    exp = Expectations.from_policy(load_policy(ev.policy_path))
    assert stages_that_ran(predicate, exp) == ("build", "probe", "journey", "update")


def test_without_an_update_journey_update_did_not_run(tmp_path: Path) -> None:
    ev = evidence(tmp_path, with_update=False)
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    exp = Expectations.from_policy(load_policy(ev.policy_path))
    assert stages_that_ran(predicate, exp) == ("build", "probe", "journey")


def _probe_layers(change: Callable[[list[str]], list[str]]) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        for entry in pred["confinement"]:
            if entry["stage"] == "probe":
                entry["layers"] = change(entry["layers"])
    return apply


def _reasons(tmp_path: Path, platform: str, edit: PredicateEdit) -> list[tuple[Code, str]]:
    ev = make_evidence(tmp_path, platforms=[PlatformSpec(platform, edit=confined(edit))])
    require_confinement(ev)
    verdict = verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths)
    assert not verdict.qualified
    return [(r.code, r.message) for r in verdict.reasons]


def test_several_foreign_layers_are_named_in_one_reason_in_the_entrys_order(tmp_path: Path) -> None:
    reasons = _reasons(tmp_path, "macos", _probe_layers(lambda layers: [*layers, "low-integrity", "job-object"]))
    assert reasons == [(Code.STAGE_UNCONFINED, "platform-macos.dsse.json: confinement[1] (probe): reports "
                                               "low-integrity, job-object, not macos layers")]


def test_several_missing_layers_are_named_in_one_reason_in_the_policys_order(tmp_path: Path) -> None:
    dropped = ("private-home", "pid-namespace")
    reasons = _reasons(tmp_path, "linux", _probe_layers(lambda layers: [x for x in layers if x not in dropped]))
    assert reasons == [(Code.STAGE_UNCONFINED, "platform-linux.dsse.json: confinement[1] (probe): ran without "
                                               "pid-namespace, private-home, which the policy requires on linux")]
