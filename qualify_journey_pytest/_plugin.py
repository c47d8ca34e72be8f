"""The plugin's hooks: collect one step per test, write the record once the session ends."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# The contract's bounds (evidence_schemas' AppStep and AppJourneyRecord): checked at collection, so that a step
# id the record could not hold is a usage error before any test runs, not a record the producer refuses later.
_STEP_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_CODE = re.compile(r"^[A-Z][A-Z0-9_]{1,79}$")
_ERRNO = re.compile(r"^E[A-Z0-9]{1,15}$")
_LAYER = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_MAX_STEPS = 256
_MAX_DETAIL = 400
_PLATFORMS = ("linux", "macos", "windows")


@dataclass
class JourneyIdentity:
    """What build the journey ran against, in the app's own words (its ``about`` output, a file it embeds).

    The ``qualify_journey`` fixture is this object; the session's conftest calls ``identify`` once.
    """

    app_version: str | None = None
    build_sha: str | None = None
    platform: str | None = None

    def identify(self, *, app_version: str, build_sha: str, platform: str) -> None:
        """Record the app's version, the commit its build embedded, and the platform it reports."""
        self.app_version, self.build_sha, self.platform = app_version, build_sha, platform


@dataclass(frozen=True)
class _Expected:
    step_id: str
    refusal: tuple[str, str | None, str | None] | None  # (code, errno, layer) of a qualify_refusal mark


@dataclass
class _Session:
    record: Path
    identity: JourneyIdentity = field(default_factory=JourneyIdentity)
    expected: dict[str, _Expected] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    # nodeid -> (observed, detail): the worst phase wins (a failed teardown turns a passed call into an error).
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)


_KEY = pytest.StashKey["_Recorder"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--qualify-journey=PATH``: write the journey record there (absent: the plugin does nothing)."""
    parser.getgroup("qualify-journey").addoption(
        "--qualify-journey", metavar="PATH", default=None,
        help="write a qualify-journey v2 record of this session's tests to PATH (the producer's {record})")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marks (always, so that --strict-markers accepts them), and the recorder when enabled."""
    config.addinivalue_line("markers", "qualify_step(id): the journey step id this test reports")
    config.addinivalue_line("markers", "qualify_refusal(code, errno=None, layer=None): this test passes only when "
                                       "the app refused with code; its step is then reject with that code")
    path = config.getoption("--qualify-journey", default=None)
    if path:
        recorder = _Recorder(_Session(Path(path).absolute()))
        config.stash[_KEY] = recorder
        config.pluginmanager.register(recorder, "qualify-journey-recorder")


@pytest.fixture(scope="session")
def qualify_journey(request: pytest.FixtureRequest) -> JourneyIdentity:
    """The session's identity object: call ``identify(app_version=, build_sha=, platform=)`` once."""
    recorder = request.config.stash.get(_KEY, None)
    # Inert runs still get an object, so a journey's conftest works unchanged under plain pytest.
    return recorder.session.identity if recorder is not None else JourneyIdentity()


def _slug(text: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]", "-", text.lower())).strip("-")


def _expected(item: pytest.Item) -> _Expected:
    mark = item.get_closest_marker("qualify_step")
    if mark is not None:
        step_id = str(mark.args[0] if mark.args else mark.kwargs.get("id", ""))
    else:
        name = getattr(item, "originalname", None) or item.name
        name = name.removeprefix("test_").removeprefix("test")
        callspec = getattr(item, "callspec", None)
        step_id = _slug(name + (f"-{callspec.id}" if callspec is not None else ""))
    if not _STEP_ID.fullmatch(step_id):
        raise pytest.UsageError(f"qualify-journey: {item.nodeid}: step id {step_id!r} is not one the record can "
                                "hold (^[a-z0-9][a-z0-9-]{0,63}$); name it with @pytest.mark.qualify_step(\"id\")")
    refusal = item.get_closest_marker("qualify_refusal")
    if refusal is None:
        return _Expected(step_id, None)
    code = refusal.kwargs.get("code", refusal.args[0] if refusal.args else None)
    errno, layer = refusal.kwargs.get("errno"), refusal.kwargs.get("layer")
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise pytest.UsageError(f"qualify-journey: {item.nodeid}: qualify_refusal needs code=\"APP_CODE\" "
                                f"(^[A-Z][A-Z0-9_]{{1,79}}$), not {code!r}")
    if errno is not None and not (isinstance(errno, str) and _ERRNO.fullmatch(errno)):
        raise pytest.UsageError(f"qualify-journey: {item.nodeid}: errno {errno!r} is not an errno name (EPERM)")
    if layer is not None and not (isinstance(layer, str) and _LAYER.fullmatch(layer)):
        raise pytest.UsageError(f"qualify-journey: {item.nodeid}: layer {layer!r} is not a layer name")
    return _Expected(step_id, (code, errno, layer))


def _first_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return f"{report.when} failed: {lines[0] if lines else 'no message'}"


def _step(expected: _Expected, observed: str, detail: str) -> dict[str, object]:
    if observed == "passed" and expected.refusal is not None:
        code, errno, layer = expected.refusal
        return {"id": expected.step_id, "observed": "reject", "code": code, "errno": errno, "layer": layer,
                "detail": (detail or f"refused with {code}")[:_MAX_DETAIL]}
    if observed == "passed":
        return {"id": expected.step_id, "observed": "allow", "code": None, "errno": None,
                "detail": (detail or "passed")[:_MAX_DETAIL]}
    if expected.refusal is not None:
        detail = f"expected refusal {expected.refusal[0]} not observed: {detail}"
    return {"id": expected.step_id, "observed": "error", "code": None, "errno": None, "detail": detail[:_MAX_DETAIL]}


def _record(session: _Session) -> dict[str, object]:
    ident = session.identity
    steps = []
    for nodeid in session.order:
        observed, detail = session.outcomes.get(nodeid, ("error", "the test did not run to its end"))
        if observed == "skipped":
            continue
        steps.append(_step(session.expected[nodeid], observed, detail))
    return {"kind": "qualify-journey", "version": 2, "app_version": ident.app_version,
            "build_sha": ident.build_sha, "platform": ident.platform, "steps": steps}


def _write(session: _Session) -> str | None:
    """Write the record; the reason it was not written, else None."""
    ident = session.identity
    if ident.app_version is None or ident.build_sha is None or ident.platform not in _PLATFORMS:
        return ("the journey never said which build it ran (call qualify_journey.identify(app_version=..., "
                "build_sha=..., platform=...) with what the installed app reports)")
    # Deferred: an inert run (this plugin loads into every pytest session) never pays for pydantic.
    from desktop_qualify.evidence_schemas import AppJourneyRecord, QualificationError, validate_model  # noqa: PLC0415
    from desktop_qualify.qualify_files import write_atomic  # noqa: PLC0415

    record = _record(session)
    try:
        validate_model(AppJourneyRecord, record, what="journey record")
        write_atomic(session.record, (json.dumps(record, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    except QualificationError as exc:
        return str(exc.diagnostics())
    return None


class _Recorder:
    """The hooks of an enabled session (registered by pytest_configure only when --qualify-journey is given)."""

    def __init__(self, session: _Session) -> None:
        self.session = session

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Give each collected test its step (refusing ids the record cannot hold, before anything runs)."""
        if len(items) > _MAX_STEPS:
            raise pytest.UsageError(f"qualify-journey: {len(items)} tests collected; a journey record holds at "
                                    f"most {_MAX_STEPS} steps")
        for item in items:
            self.session.expected[item.nodeid] = _expected(item)
            self.session.order.append(item.nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold each phase's report into its test's outcome: the worst phase wins."""
        outcomes = self.session.outcomes
        earlier = outcomes.get(report.nodeid)
        if earlier is not None and earlier[0] in {"error", "skipped"}:
            return
        if hasattr(report, "wasxfail"):
            outcomes[report.nodeid] = ("error", f"expected to fail: {report.wasxfail or 'xfail'}")
        elif report.failed:
            outcomes[report.nodeid] = ("error", _first_line(report))
        elif report.skipped:
            outcomes[report.nodeid] = ("skipped", "")
        elif report.when == "call":
            outcomes[report.nodeid] = ("passed", "")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the record; a session whose only trouble was failing tests then exits 0 (the module's doc)."""
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return  # interrupted, a usage error, nothing collected: no journey ran, so no record claims one
        problem = _write(self.session)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if problem is not None:
            if reporter is not None:
                reporter.write_line(f"qualify-journey: no record written: {problem}", red=True)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            return
        if reporter is not None:
            reporter.write_line(f"qualify-journey: wrote {self.session.record}")
        session.exitstatus = pytest.ExitCode.OK
