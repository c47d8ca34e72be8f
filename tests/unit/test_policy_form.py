"""One policy form: the loader's Policy is what every stage reads; the verifier's expectations are a view of it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import Expectations

REPO = Path(__file__).resolve().parents[2]
PIPELINE = ("producer", "aggregate", "consumer", "evidence_schemas", "qualify_policy", "qualify_verify")


def _getattr_by_platform(path: Path) -> list[int]:
    """Lines calling getattr(x, <name containing 'platform'>): a part of the policy picked by attribute name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and "platform" in ast.unparse(node.args[1])):
            found.append(node.lineno)
    return found


def test_no_stage_reads_a_platform_part_by_attribute_name() -> None:
    offenders = {str(p.relative_to(REPO)): lines for pkg in PIPELINE for p in sorted((REPO / pkg).rglob("*.py"))
                 if (lines := _getattr_by_platform(p))}
    assert offenders == {}


def test_the_checker_sees_such_a_call(tmp_path: Path) -> None:
    # The test above must be able to fail: a getattr by platform name is found.
    sample = tmp_path / "sample.py"
    sample.write_text("def f(policy, job):\n    return getattr(policy.signing, job.platform)\n", encoding="utf-8")
    assert _getattr_by_platform(sample) == [2]


def test_expectations_hold_the_policy_and_nothing_else() -> None:
    assert [f.name for f in dataclasses.fields(Expectations)] == ["policy"]


@pytest.mark.parametrize("name", ["local.toml", "release.toml"])
def test_expectations_read_through_to_the_policy(name: str) -> None:
    policy = load_policy(REPO / "policies" / name)
    exp = Expectations.from_policy(policy)
    assert exp.policy is policy
    assert exp.policy_sha256 == policy.sha256
    assert exp.required_steps == tuple(policy.file.journey.steps)
    for platform in ("linux", "macos", "windows"):
        assert exp.accepted_signing(platform) == frozenset(getattr(policy.file.signing, platform))
        assert exp.layers_for(platform) == (None if policy.file.isolation is None
                                            else tuple(getattr(policy.file.isolation, platform)))
        assert exp.install_for(platform) == getattr(policy.file.app.install, platform)
        assert exp.display_for(platform) == (getattr(policy.file.app.display, platform) or "none")


def test_the_update_policy_is_the_local_policy_plus_the_update_journey() -> None:
    # local-update.toml must not drift from local.toml (a layer, a key or a step the default requires).
    local = load_policy(REPO / "policies" / "local.toml").file.model_dump()
    update = load_policy(REPO / "policies" / "local-update.toml").file.model_dump()
    assert update.pop("update") is not None
    assert update["app"].pop("state") is not None
    assert local.pop("update") is None
    assert local["app"].pop("state") is None
    # Its name is its own, so a decision or report says which of the two judged.
    assert (update.pop("name"), local.pop("name")) == ("local-update", "local")
    assert update == local
