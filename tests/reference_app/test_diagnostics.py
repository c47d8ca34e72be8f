"""Network diagnostics: fixed executables, argv built from a destination the egress rules accepted."""

import pytest
from skillhost._errors import SkillError
from skillhost.brokers._diagnostics import TEMPLATES, Diagnostics
from skillhost.brokers._process import ProcessPort


def code_of(fn):
    with pytest.raises(SkillError) as info:
        fn()
    return info.value.code


def checked(host, port):
    if host != "api.example.test":
        raise SkillError("CC_SKILL_EGRESS_HOST_DENIED", "not listed")
    return "203.0.114.7"


@pytest.mark.parametrize("platform", sorted(TEMPLATES))
def test_argv_is_the_platform_template_with_only_checked_values(platform, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda exe: f"/fixed/{exe}")
    diag = Diagnostics(checked, platform)
    for tool, (exe, args) in TEMPLATES[platform].items():
        built = diag.build(tool, "api.example.test", 8443)
        assert built.argv[0] == f"/fixed/{exe}"
        expected = [{"{name}": "api.example.test", "{address}": "203.0.114.7", "{port}": "8443"}.get(a, a)
                    for a in args]
        assert list(built.argv[1:]) == expected


@pytest.mark.parametrize(
    ("tool", "host", "port", "code"),
    [
        ("sh", "api.example.test", 443, "CC_SKILL_PROCESS_DENIED"),
        ("ping", "evil.test", 443, "CC_SKILL_EGRESS_HOST_DENIED"),
        ("ping", ["api.example.test"], 443, "CC_SKILL_PORT_BAD_ARGS"),
        ("ping", "api.example.test", "443", "CC_SKILL_PORT_BAD_ARGS"),
        ("ping", "api.example.test", True, "CC_SKILL_PORT_BAD_ARGS"),
    ],
)
def test_refusals(tool, host, port, code):
    assert code_of(lambda: Diagnostics(checked, "linux").build(tool, host, port)) == code


def test_a_missing_tool_is_unavailable_after_the_destination_check(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda exe: None)
    diag = Diagnostics(checked, "linux")
    assert code_of(lambda: diag.build("ping", "evil.test")) == "CC_SKILL_EGRESS_HOST_DENIED"
    assert code_of(lambda: diag.build("ping", "api.example.test")) == "CC_SKILL_PROCESS_UNAVAILABLE"


def test_the_process_port_without_diagnostics(tmp_path):
    assert code_of(lambda: ProcessPort(tmp_path).diagnose("ping", "api.example.test")) == "CC_SKILL_PROCESS_DENIED"
    withheld = ProcessPort(tmp_path, diagnostics_withheld=True)
    assert code_of(lambda: withheld.diagnose("ping", "api.example.test")) == "CC_SKILL_AUTHORITY_DENIED"
    assert ProcessPort(tmp_path).audit_target("diagnose", ["ping", "x"], {}) == "diagnose:ping:?"
    assert ProcessPort(tmp_path).audit_target("diagnose", ["rm -rf", "x"], {}) == "diagnose:?:?"


def test_a_diagnostic_is_audited_with_its_host_and_the_decision_that_allowed_it(tmp_path):
    diag = Diagnostics(checked, "linux", label=lambda host, port: f"d-7@{host}")
    port = ProcessPort(tmp_path, diagnostics=diag)
    assert port.audit_target("diagnose", ["ping", "api.example.test"], {}) == "diagnose:ping:d-7@api.example.test"
    assert port.audit_target("diagnose", ["ping"], {"host": "api.example.test"}) == "diagnose:ping:d-7@api.example.test"
    # A host that is not a printable ASCII name is never echoed.
    assert port.audit_target("diagnose", ["ping", "a\nb"], {}) == "diagnose:ping:?"


def test_the_host_may_choose_a_tool_executable_but_not_its_argv(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda exe: f"/fixed/{exe}")
    diag = Diagnostics(checked, "linux", executables={"dns-lookup": "/opt/tools/lookup"})
    assert diag.build("dns-lookup", "api.example.test").argv == ("/opt/tools/lookup", "ahosts", "api.example.test")
    assert diag.build("ping", "api.example.test").argv[0] == "/fixed/ping"


@pytest.mark.skipif(not __import__("shutil").which("getent"), reason="getent")
def test_a_diagnostic_runs_through_the_process_broker(tmp_path):
    port = ProcessPort(tmp_path, diagnostics=Diagnostics(checked, "linux"))
    res = port.diagnose("dns-lookup", "api.example.test")
    assert res["command"] == "dns-lookup"
    assert isinstance(res["returncode"], int)
