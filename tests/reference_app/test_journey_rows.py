"""The journey's reject tables and the loop that walks them (the journey itself runs in test_cli)."""

import pytest
from skillhost.host._host import HostConfig, SkillHost
from skillhost.journey._brokers import CROSS_PROCESS_REJECTS, ENV_REJECTS
from skillhost.journey._external import WORKER_REJECTS
from skillhost.journey._on_host import on_host
from skillhost.journey._packages import SAFE_MODE_REJECTS, _package_rows
from skillhost.journey._rows import Package, PackageBuilder, RejectRow, abort_timer, walk
from skillhost.packaging._signing import LOCK_NAME, SIG_NAME, TrustStore, new_key

GOOD_PY = "def run(ports, args):\n    return {'t': ports.time.now()}\n"


def _all_rows(tmp_path):
    return [*WORKER_REJECTS, *ENV_REJECTS, *CROSS_PROCESS_REJECTS, *_package_rows(tmp_path), *SAFE_MODE_REJECTS]


def test_rows_have_unique_ids_and_cc_skill_codes(tmp_path):
    rows = _all_rows(tmp_path)
    assert len({r.sid for r in rows}) == len(rows)
    assert all(r.code.startswith("CC_SKILL_") for r in rows)


def test_builder_reuses_a_folder_for_the_same_spec_and_signs_only_with_a_signer(tmp_path):
    build = PackageBuilder(tmp_path, {"good": new_key()})
    signed = Package("signed", GOOD_PY)
    assert build(signed) == build(signed)
    unsigned = build(Package("unsigned", GOOD_PY, signer=None))
    assert (build(signed) / SIG_NAME).is_file()
    assert (unsigned / LOCK_NAME).is_file()
    assert not (unsigned / SIG_NAME).exists()


def test_a_tamper_the_platform_refuses_fails_the_step_without_running_it(tmp_path):
    ran = []
    row = RejectRow("x-rejected", Package("p", GOOD_PY), "CC_SKILL_PACKAGE_INVALID", tamper=lambda d: "no symlinks")
    steps = walk([row], PackageBuilder(tmp_path, {"good": new_key()}), lambda r, d: ran.append(r) or {})
    assert ran == []
    assert steps[0]["passed"] is False
    assert (steps[0]["observed"], steps[0]["observed_code"], steps[0]["detail"]) == ("allow", None, "no symlinks")


def test_host_runner_refuses_a_row_that_mutates_between_discovery_and_verification(tmp_path):
    key = new_key()
    host = SkillHost(HostConfig(workspace=tmp_path, trust=TrustStore.from_public_keys([key.public_key()])))
    row = RejectRow("x-rejected", Package("p", GOOD_PY), "CC_SKILL_DIGEST_DRIFT", mutate=lambda d: None)
    with pytest.raises(ValueError, match="cannot mutate"):
        walk([row], PackageBuilder(tmp_path, {"good": key}), on_host(host))


def test_abort_timer():
    with abort_timer(None) as none:
        assert none is None
    with abort_timer(0.01) as cancel:
        assert cancel is not None
        assert cancel.wait(5)
