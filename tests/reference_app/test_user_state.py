"""The skill host's state verbs (docs/app-contract.md, "State verbs"), run from source in a throw-away home.

The state is a trusted publisher key, an installed signed external skill and the list naming it;
`state check` re-verifies them and reports one digest, and refuses (exit 3, CC_SKILL_*) a state
that is gone, tampered with, or was opened by a newer version (downgrade protection).
"""

import json
import shutil

import pytest
from skillhost_testutil import run_source

STATE = ".skillhost-user"


def _state(home, verb, record=None):
    args = ["state", verb] + (["--record", str(record)] if record else [])
    return run_source(args, env_extra={"HOME": str(home), "USERPROFILE": str(home)})


@pytest.fixture
def written(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    rc, report, _ = _state(home, "write", tmp_path / "write.json")
    assert rc == 0, report
    return home, report


def test_write_then_check_reports_the_same_state(written, tmp_path):
    home, report = written
    assert (report["kind"], report["verb"], report["observed"], report["code"]) == ("qualify-state", "write",
                                                                                    "allow", None)
    assert json.loads((tmp_path / "write.json").read_text()) == report
    rc, checked, _ = _state(home, "check")
    assert rc == 0
    assert checked["observed"] == "allow"
    assert checked["state_sha256"] == report["state_sha256"]
    # Checking twice changes nothing the digest covers (the profile marker is outside it).
    assert _state(home, "check")[1]["state_sha256"] == report["state_sha256"]


def test_write_refuses_an_existing_state(written):
    home, _ = written
    rc, report, _ = _state(home, "write")
    assert rc == 3
    assert report["code"] == "CC_SKILL_STATE_EXISTS"


@pytest.mark.parametrize(("spoil", "code"), [
    (shutil.rmtree, "CC_SKILL_STATE_MISSING"),
    (lambda root: shutil.rmtree(root / "skills" / "user-greeter"), "CC_SKILL_STATE_MISSING"),
    (lambda root: (root / "skills" / "user-greeter" / "handler.py").write_text("def run(p, a):\n    return 1\n"),
     "CC_SKILL_DIGEST_DRIFT"),
    (lambda root: (root / "trust-store.json").write_text('{"version":1,"keys":[]}'), "CC_SKILL_SIGNER_UNKNOWN"),
    (lambda root: (root / "installed.json").write_text('{"skills": []}'), "CC_SKILL_STATE_INVALID"),
    (lambda root: (root / "profile.json").write_text('{"format":1,"newest_opened_by":"9.0.0"}'),
     "CC_SKILL_STATE_NEWER"),
    (lambda root: (root / "profile.json").write_text('{"format":1,"newest_opened_by":"nightly"}'),
     "CC_SKILL_STATE_NEWER"),
], ids=["state-gone", "skill-gone", "skill-tampered", "publisher-untrusted", "list-emptied", "opened-by-newer",
        "opened-by-unknown-version"])
def test_check_refuses_a_lost_or_newer_state(written, spoil, code, tmp_path):
    home, _ = written
    spoil(home / STATE)
    rc, report, _ = _state(home, "check", tmp_path / "check.json")
    assert rc == 3
    assert (report["observed"], report["code"], report["state_sha256"]) == ("reject", code, None)
    assert json.loads((tmp_path / "check.json").read_text()) == report
