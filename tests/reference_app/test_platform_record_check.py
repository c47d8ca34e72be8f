"""Issue 35 item 7: tools/check_platform_record.py, the check ci.yml's macOS and Windows jobs run on their first
real record. Held here on a real Linux record (this app's probe and journey from source) and on synthetic macOS
and Windows records made from it the way the unit tests assume those platforms answer; each difference a first
real run could show is caught and named.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from skillhost.journey._kernel import REFUSED_BY, STEP_IDS
from skillhost.os_sandbox._macos import profile_digest
from skillhost.os_sandbox._windows import WINDOWS_LAYERS
from skillhost_testutil import REPO, run_source

sys.path.insert(0, str(REPO / "tools"))
try:
    import check_platform_record as tool
finally:
    sys.path.remove(str(REPO / "tools"))


@pytest.fixture(scope="module")
def linux_record() -> tuple[dict[str, Any], dict[str, Any]]:
    rc, probe, _ = run_source(["probe"])
    assert rc == 0, probe
    rc, journey, _ = run_source(["journey"], timeout=300)
    assert rc == 0, journey
    return probe, journey


def _write(folder: Path, probe: dict[str, Any] | None, journey: dict[str, Any] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, record in (("probe.json", probe), ("journey.json", journey)):
        if record is not None:
            (folder / name).write_text(json.dumps(record), encoding="utf-8")
    return folder


_READ_BACK = {  # what each platform's worker reads back, as the unit tests' recorders feed it
    "windows": {"job-object": "limit flags 0x2508, active processes 1, ui limits 0xff",
                "no-child-process": "child process policy flags 0x1",
                "appcontainer": "S-1-15-2-1-2-3-4-5-6-7, integrity RID 0x1000",
                "restricted-token": "integrity RID 0x1000 (low)"},
    "macos": {"sandbox-exec": f"sandbox_check=1, profile sha256 {profile_digest(1)[:16]}"},
}  # fmt: skip
_ERRNO = {"windows": "EACCES", "macos": "EPERM"}


def _as(platform: str, record: tuple[dict[str, Any], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Linux record as ``platform``'s worker would give it, were the unit tests' assumptions right."""
    probe, journey = json.loads(json.dumps(record[0])), json.loads(json.dumps(record[1]))
    names = WINDOWS_LAYERS if platform == "windows" else ("sandbox-exec",)
    layers = [{"name": n, "applied": True, "detail": _READ_BACK[platform][n]} for n in names]
    for rec in (probe, journey):
        rec["platform"], rec["isolation_layers"] = platform, layers
    for step in journey["steps"]:
        op = next((op for op, sid in STEP_IDS.items() if sid == step["id"]), None)
        if op is not None:
            step["errno"] = _ERRNO[platform]
            step["layer"] = REFUSED_BY[platform][(op, _ERRNO[platform])]
    return probe, journey


def _step(journey: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in journey["steps"] if s["id"] == step_id)


def test_the_linux_record_matches(linux_record: Any, tmp_path: Path) -> None:
    code, lines = tool.check("linux", _write(tmp_path, *linux_record), REPO / "policies" / "release.toml")
    assert code == 0, lines
    assert lines[0].startswith("linux record matches: read-outside-bundle=landlock-fs/EACCES")


@pytest.mark.parametrize("platform", ["windows", "macos"])
def test_a_record_as_the_unit_tests_assume_matches(linux_record: Any, tmp_path: Path, platform: str) -> None:
    assert tool.main(["--platform", platform, "--records", str(_write(tmp_path, *_as(platform, linux_record)))]) == 0


def test_no_record_yet_is_nothing_to_check_but_half_a_record_is_a_difference(linux_record: Any,
                                                                             tmp_path: Path) -> None:
    assert tool.check("windows", tmp_path / "none", REPO / "policies" / "release.toml") == (
        0, [f"no windows record in {tmp_path / 'none'} yet: nothing to check"])
    code, lines = tool.check("windows", _write(tmp_path / "half", linux_record[0], None),
                             REPO / "policies" / "release.toml")  # fmt: skip
    assert code == 1
    assert "only probe.json" in lines[0]


def _differences(platform: str, probe: dict[str, Any], journey: dict[str, Any], folder: Path) -> list[str]:
    code, lines = tool.check(platform, _write(folder, probe, journey), REPO / "policies" / "release.toml")
    assert code == 1
    return lines[1:]


def test_a_windows_record_under_the_fallback_token_is_named_step_by_step(linux_record: Any, tmp_path: Path) -> None:
    probe, journey = _as("windows", linux_record)
    for rec in (probe, journey):  # no AppContainer could be created: the restricted token alone
        rec["isolation_layers"] = [e for e in rec["isolation_layers"] if e["name"] != "appcontainer"]
    _step(journey, "kernel-refuses-write-outside-tmp")["layer"] = "restricted-token"
    found = _differences("windows", probe, journey, tmp_path)
    assert "  layer appcontainer: not applied (the app's REQUIRED_LAYERS)" in found
    assert "  kernel-refuses-write-outside-tmp: attributed to restricted-token, the unit tests assumed appcontainer" \
        in found
    assert any(line.startswith("  journey: the journey's isolation: required isolation layer(s) not applied")
               for line in found)


def test_a_windows_read_back_other_than_the_recorders_fed_is_a_difference(linux_record: Any, tmp_path: Path) -> None:
    probe, journey = _as("windows", linux_record)
    for rec in (probe, journey):  # a Medium integrity container token: the read-back the unit tests never fed
        rec["isolation_layers"][2]["detail"] = "S-1-15-2-1-2-3, integrity RID 0x2000"
    assert _differences("windows", probe, journey, tmp_path) == [
        "  layer appcontainer: read back 'S-1-15-2-1-2-3, integrity RID 0x2000', the unit tests assumed S-1-15-2- "
        "and integrity RID 0x1000"]


def test_an_errno_the_app_does_not_expect_is_a_difference_even_where_the_policy_accepts_it(
    linux_record: Any, tmp_path: Path,
) -> None:
    probe, journey = _as("windows", linux_record)
    step = _step(journey, "kernel-refuses-exec-shell")
    step["errno"], step["layer"] = "EPERM", None  # the policy accepts EPERM; no Windows layer gives it
    step["observed"], step["code"] = "reject", "CC_SKILL_SANDBOX_INCONCLUSIVE"
    found = _differences("windows", probe, journey, tmp_path)
    assert "  kernel-refuses-exec-shell: refused with EPERM, the unit tests assumed EACCES" in found


def test_a_macos_profile_other_than_this_builds_is_a_difference(linux_record: Any, tmp_path: Path) -> None:
    probe, journey = _as("macos", linux_record)
    for rec in (probe, journey):
        rec["isolation_layers"][0]["detail"] = "sandbox_check=1, profile sha256 0123456789abcdef"
    found = _differences("macos", probe, journey, tmp_path)
    assert found == [f"  layer sandbox-exec: read back 'sandbox_check=1, profile sha256 0123456789abcdef', the "
                     f"frozen worker's profile gives 'sandbox_check=1, profile sha256 {profile_digest(1)[:16]}'"]


def test_an_unusable_own_folder_is_a_difference(linux_record: Any, tmp_path: Path) -> None:
    probe, journey = _as("windows", linux_record)
    step = _step(journey, "worker-tmp-write-rename-delete")
    step.update(observed="reject", code="CC_SKILL_SANDBOX_TMP_UNUSABLE", detail="write in its own folder refused "
                "with EACCES")  # fmt: skip
    found = _differences("windows", probe, journey, tmp_path)
    assert "  worker-tmp-write-rename-delete: reject CC_SKILL_SANDBOX_TMP_UNUSABLE: write in its own folder " \
        "refused with EACCES" in found


def test_a_record_of_another_platform_is_refused(linux_record: Any, tmp_path: Path) -> None:
    found = _differences("macos", *linux_record, tmp_path)
    assert found == ["  probe.json: the record is for linux, not macos", "  journey.json: the record is for linux, "
                     "not macos"]  # fmt: skip
