"""The committed policies and the app's journey agree step for step (a drift test, like the catalog's).

The policy owns what each required step must show; the app's record (app
contract v2) reports observations only. This test fails when the app's journey
adds, drops, renames or reorders a step without the policies following, or when
a policy expects something other than what the journey observes.
"""

from pathlib import Path

import pytest
from desktop_qualify.qualify_policy import load_policy
from skillhost_testutil import REPO, run_source

POLICIES = [REPO / "policies" / "local.toml", REPO / "policies" / "release.toml"]


@pytest.fixture(scope="module")
def journey_steps():
    rc, out, _ = run_source(["journey"])
    assert rc == 0, out
    assert out["kind"] == "qualify-journey"
    return out["steps"]


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
def test_policy_steps_are_the_journey_steps_in_the_same_order(policy_path, journey_steps):
    table = load_policy(policy_path).file.journey.steps
    assert list(table) == [s["id"] for s in journey_steps]


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
def test_every_step_the_journey_observes_is_what_the_policy_requires(policy_path, journey_steps):
    table = load_policy(policy_path).file.journey.steps
    off = [(s["id"], s["observed"], s["code"], s["detail"]) for s in journey_steps
           if (s["observed"], s["code"]) != (table[s["id"]].expect, table[s["id"]].code)]
    assert off == []


def test_the_two_policies_require_the_same_journey():
    local, release = (load_policy(p).file.journey.steps for p in POLICIES)
    assert dict(local) == dict(release)


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
def test_each_kernel_step_records_an_errno_the_policy_accepts_and_no_other_step_does(policy_path, journey_steps):
    from skillhost.journey._kernel import KERNEL_ERRNOS, STEP_IDS

    table = load_policy(policy_path).file.journey.steps
    for s in journey_steps:
        want = table[s["id"]].errno
        if s["id"] in STEP_IDS.values():
            assert want == list(KERNEL_ERRNOS)
            assert s["errno"] in want, s
        else:
            assert want is None, s
            assert s["errno"] is None, s


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
def test_the_app_fails_closed_on_the_layers_the_policy_requires(policy_path):
    from skillhost.os_sandbox._dispatch import REQUIRED_LAYERS

    isolation = load_policy(policy_path).file.isolation
    assert isolation is not None
    assert {platform: list(layers) for platform, layers in REQUIRED_LAYERS.items()} == {
        "linux": isolation.linux, "macos": isolation.macos, "windows": isolation.windows}


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
def test_each_kernel_step_records_the_layer_the_policy_requires_on_this_platform(policy_path, journey_steps):
    from skillhost.journey._kernel import STEP_IDS
    from skillhost.os_sandbox import platform_key

    table = load_policy(policy_path).file.journey.steps
    for s in journey_steps:
        want = table[s["id"]].layer
        if s["id"] in STEP_IDS.values():
            assert want is not None, s
            assert s["layer"] == want.for_platform(platform_key()), s
        else:
            assert want is None, s
            assert s["layer"] is None, s


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_the_app_can_attribute_each_kernel_step_to_the_policys_layer_on_every_platform(policy_path, platform):
    """The policy names, per platform, a layer the app's errno table can name for that step: otherwise the step
    could never pass there (a policy or an app that drifted). Where the step is not observed, this is the
    only check that the two agree."""
    from skillhost.journey._kernel import REFUSED_BY, STEP_IDS

    table = load_policy(policy_path).file.journey.steps
    for op, sid in STEP_IDS.items():
        want, errnos = table[sid].layer, table[sid].errno or []
        assert want is not None
        layer = want.for_platform(platform)
        assert layer is not None, (sid, platform)
        assert any(REFUSED_BY[platform].get((op, err)) == layer for err in errnos), (sid, platform, layer)


@pytest.mark.parametrize("policy_path", POLICIES, ids=lambda p: Path(p).name)
def test_the_apps_errno_table_and_the_policys_refusals_agree(policy_path):
    """Every (operation, errno) the app attributes to a layer is an errno the policy says that layer refuses with:
    otherwise the verifier would re-derive another layer than the one the app records."""
    from skillhost.journey._kernel import REFUSED_BY

    isolation = load_policy(policy_path).file.isolation
    assert isolation is not None
    assert isolation.refuses_with is not None
    off = [(platform, op, errno, name) for platform, table in REFUSED_BY.items()
           for (op, errno), name in table.items() if errno not in isolation.refuses_with.get(name, [])]
    assert off == []
