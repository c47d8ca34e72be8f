"""The pytest plugin writes the qualify-journey v2 record the producer reads, from real pytest sessions (pytester).

Each record is parsed exactly as the producer parses an app's record (producer/_app_output.py) and judged as
the producer judges a journey (qualify_verify's journey_facts) against a step table, so "valid" means what the
pipeline means by it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import AppJourneyRecord
from desktop_qualify.producer._app_output import load_app_record
from desktop_qualify.qualify_policy._model import StepExpectation
from desktop_qualify.qualify_verify._outcomes import journey_facts

SHA = "a" * 40
IDENTIFY = f"""
import pytest

@pytest.fixture(scope="session", autouse=True)
def _identify(qualify_journey):
    qualify_journey.identify(app_version="1.2.3", build_sha="{SHA}", platform="linux")
"""

JOURNEY = """
import pytest

class Refused(Exception):
    def __init__(self, code):
        self.code = code

def app_open(name):
    if name.startswith(".."):
        raise Refused("TINY_PATH_DENIED")
    return "opened"

def test_open_document():
    assert app_open("a.txt") == "opened"

@pytest.mark.qualify_refusal(code="TINY_PATH_DENIED")
def test_open_outside_refused():
    with pytest.raises(Refused) as caught:
        app_open("../etc/passwd")
    assert caught.value.code == "TINY_PATH_DENIED"

@pytest.mark.qualify_refusal(code="TINY_PATH_DENIED")
def test_open_absolute_refused():
    with pytest.raises(Refused):  # the app lets an absolute path through: no refusal happens
        app_open("/etc/passwd")

@pytest.mark.qualify_step("save-is-durable")
def test_whatever_name():
    assert 1 + 1 == 3, "the saved note was lost"

@pytest.mark.skip(reason="not on this platform")
def test_skipped_step():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("could not start the app")

def test_needs_app(broken):
    pass

@pytest.mark.parametrize("size", ["Small", "LARGE"])
def test_resize(size):
    pass
"""

EXPECTED_STEPS = [
    {"id": "open-document", "observed": "allow", "code": None, "errno": None},
    {"id": "open-outside-refused", "observed": "reject", "code": "TINY_PATH_DENIED", "errno": None},
    {"id": "open-absolute-refused", "observed": "error", "code": None, "errno": None},
    {"id": "save-is-durable", "observed": "error", "code": None, "errno": None},
    {"id": "needs-app", "observed": "error", "code": None, "errno": None},
    {"id": "resize-small", "observed": "allow", "code": None, "errno": None},
    {"id": "resize-large", "observed": "allow", "code": None, "errno": None},
]


def _session(pytester: pytest.Pytester, journey: str = JOURNEY, conftest: str = IDENTIFY) -> Path:
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_journey=journey)
    return pytester.path / "out" / "record.json"


def _record(path: Path) -> AppJourneyRecord:
    return load_app_record(AppJourneyRecord, path, what="journey record")


def test_a_session_becomes_one_step_per_test_in_a_record_the_producer_reads(pytester: pytest.Pytester) -> None:
    record_path = _session(pytester)
    (record_path.parent).mkdir()
    result = pytester.runpytest("-p", "no:cacheprovider", f"--qualify-journey={record_path}")
    # Failing tests are error steps in the record; the session itself ran to its end and wrote it: exit 0.
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"qualify-journey: wrote {record_path}"])
    record = _record(record_path)
    assert (record.kind, record.version, record.app_version, record.build_sha, record.platform) == \
        ("qualify-journey", 2, "1.2.3", SHA, "linux")
    assert [step.model_dump(include={"id", "observed", "code", "errno"}) for step in record.steps] == EXPECTED_STEPS
    details = {step.id: step.detail for step in record.steps}
    assert details["open-absolute-refused"].startswith("expected refusal TINY_PATH_DENIED not observed: call failed")
    assert "the saved note was lost" in details["save-is-durable"]
    assert details["needs-app"].startswith("setup failed: RuntimeError: could not start the app")
    assert list(record_path.parent.iterdir()) == [record_path]  # no temporary file left beside it


def test_a_refusal_that_does_not_happen_fails_the_step_the_verifier_names(pytester: pytest.Pytester) -> None:
    record_path = _session(pytester)
    pytester.runpytest("-p", "no:cacheprovider", f"--qualify-journey={record_path}")
    expected = {"open-document": StepExpectation(expect="allow"),
                "open-outside-refused": StepExpectation(expect="reject", code="TINY_PATH_DENIED"),
                "open-absolute-refused": StepExpectation(expect="reject", code="TINY_PATH_DENIED")}
    record = _record(record_path)
    facts = journey_facts(steps=record.steps, expected=expected, code_pattern="^TINY_[A-Z_]{2,40}$", exit_code=0,
                          timed_out=False, app_build_sha=record.build_sha, sha=SHA, platform="linux", layers=[],
                          required_layers=None, refuses_with=None, probe_layers=None)
    assert not facts.passed
    assert "open-absolute-refused" in facts.failed
    assert "open-outside-refused" not in facts.failed
    assert "open-document" not in facts.failed


def test_the_plugin_is_inert_without_the_option(pytester: pytest.Pytester) -> None:
    _session(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an ordinary run keeps pytest's own exit status
    assert "qualify-journey" not in result.stdout.str()
    assert sorted(path.name for path in pytester.path.rglob("*.json")) == []


def test_a_journey_that_never_says_which_build_ran_writes_nothing(pytester: pytest.Pytester) -> None:
    record_path = _session(pytester, conftest="")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--qualify-journey={record_path}")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["qualify-journey: no record written: the journey never said which build it ran*"])
    assert not record_path.exists()


def test_a_build_sha_the_record_cannot_hold_writes_nothing(pytester: pytest.Pytester) -> None:
    record_path = _session(pytester, conftest=IDENTIFY.replace(SHA, "not-a-sha"))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--qualify-journey={record_path}")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["qualify-journey: no record written: QE_SCHEMA_INVALID*build_sha*"])
    assert not record_path.exists()


@pytest.mark.parametrize(("journey", "message"), [
    ("import pytest\n@pytest.mark.qualify_step('Bad Id')\ndef test_a():\n    pass\n", "step id 'Bad Id'"),
    ("import pytest\n@pytest.mark.qualify_refusal(code='lower')\ndef test_a():\n    pass\n", "qualify_refusal needs"),
    ("import pytest\n@pytest.mark.qualify_refusal(code='APP_X', errno='eperm')\ndef test_a():\n    pass\n",
     "errno 'eperm'"),
])
def test_a_step_the_record_cannot_hold_is_refused_before_any_test_runs(pytester: pytest.Pytester, journey: str,
                                                                        message: str) -> None:
    record_path = _session(pytester, journey=journey)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--qualify-journey={record_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert not record_path.exists()


def test_an_interrupted_session_claims_no_journey(pytester: pytest.Pytester) -> None:
    record_path = _session(pytester, journey="import pytest\ndef test_a():\n    pytest.exit('stop', 4)\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--qualify-journey={record_path}")
    assert result.ret != 0
    assert not record_path.exists()


def test_the_entry_point_loads_it_and_costs_no_pydantic_when_inert() -> None:
    code = ("import sys, importlib.metadata as m\n"
            "names = [e.value for e in m.entry_points(group='pytest11')]\n"
            "import desktop_qualify.qualify_journey_pytest\n"
            "print(json.dumps([names, 'pydantic' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, check=True)
    names, pydantic_loaded = json.loads(done.stdout)
    assert "desktop_qualify.qualify_journey_pytest" in names
    assert pydantic_loaded is False
