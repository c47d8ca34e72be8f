"""The audit never drops a record, every grant is bound, and a denial decides the run.

Seed terms these hold (the skill host's design): every allow and deny carries the
skill id, the authority or declassification id, the operation and the target; a
call's ports are declared ∩ catalog ∩ authority ∩ broker policy; the process and
local-service brokers are bound to skill and authority; a denial is
authoritative even if the handler swallows it; external code never runs in the
host process.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from skillhost._errors import SkillError
from skillhost.brokers import (
    AUDIT_FULL,
    MAX_AUDIT,
    Broker,
    Diagnostics,
    EgressPolicy,
    HttpsPort,
    LoopbackPort,
    LoopbackServices,
    ProcessPort,
    TimePort,
    default_ports,
    entry_id,
    git_rules,
)
from skillhost.brokers._env import EnvironmentPort
from skillhost.host import Authority, HostConfig, SkillHost, run_bundled
from skillhost.packaging import KNOWN_CAPABILITIES, TrustStore, generate, render
from skillhost_testutil import APP_DIR

ENV = frozenset({"environment:read"})


def code_of(fn):
    with pytest.raises(SkillError) as info:
        fn()
    return info.value.code


def _refusals(broker, calls):
    raised = 0
    for _ in range(calls):
        try:
            broker.call("env", "get", ["missing"])
        except SkillError:
            raised += 1
    return raised


def test_a_full_audit_stops_the_run_and_counts_every_refusal_it_could_not_record():
    broker = Broker("s", "e", ["environment:read"], {"env": EnvironmentPort({})}, max_requests=10_000, granted=ENV)
    raised = _refusals(broker, 400)
    assert raised == 400
    audit = broker.audit
    assert len(audit) <= MAX_AUDIT
    last = audit[-1]
    assert (last["event"], last["code"], last["skill_id"]) == ("overflow", AUDIT_FULL, "s")
    # Each refusal is a record of its own or is counted in the overflow record: none is missing.
    recorded = sum(1 for a in audit if a["event"] == "denied")
    assert last["target"] == f"refused={raised - recorded}"
    assert recorded + broker.overflow == raised
    assert broker.audit_full


def test_once_full_the_broker_runs_nothing_more():
    ran = []

    class Counting(TimePort):
        def now(self) -> str:
            ran.append(1)
            return super().now()

    broker = Broker("s", "e", ["runtime:time"], {"time": Counting()}, max_requests=10_000,
                    granted=frozenset({"runtime:time"}))
    while not broker.audit_full:
        try:
            broker.call("time", "now")
        except SkillError:
            break
    assert broker.denials == [AUDIT_FULL]
    before = len(ran)
    for _ in range(10):
        assert code_of(lambda: broker.call("time", "now")) == AUDIT_FULL
    assert len(ran) == before
    assert broker.audit[-1]["target"] == "refused=11"


def test_every_record_names_the_skill_authority_operation_and_a_target():
    broker = Broker("s", "e", ["environment:read", "runtime:time"],
                    {"env": EnvironmentPort({"k": "v"}), "time": TimePort()}, authority="task",
                    granted=frozenset({"runtime:time"}))
    broker.call("time", "now")
    # Refused by the pre-checks: not granted, not declared, an unknown port. Each still names what was asked.
    assert code_of(lambda: broker.call("env", "get", ["k"])) == "CC_SKILL_AUTHORITY_DENIED"
    assert code_of(lambda: broker.call("https", "get", ["https://api.example.test/x?token=1"])) == (
        "CC_SKILL_CAPABILITY_UNDECLARED")
    assert code_of(lambda: broker.call("process", "run", [["git", "status; rm -rf /"]])) == (
        "CC_SKILL_CAPABILITY_UNDECLARED")
    assert code_of(lambda: broker.call("nope", "x")) == "CC_SKILL_PORT_UNKNOWN"
    targets = [(a["event"], a["target"]) for a in broker.audit]
    assert targets == [("start", "utc-clock"), ("done", "utc-clock"), ("denied", "k"),
                       ("denied", "api.example.test"), ("denied", "run:git"), ("denied", "?")]
    assert all(a["skill_id"] == "s" and a["authority"] == "task" and a["method"] for a in broker.audit)


class _Gate:
    """A port whose call blocks until released, like a slow service at the run deadline."""

    methods = ("wait",)

    def __init__(self):
        self.release = threading.Event()

    def wait(self):
        self.release.wait(5)
        return "late"

    def audit_target(self, method, args, kwargs):
        return "gate"


def test_a_call_abandoned_at_the_deadline_records_how_it_ended(monkeypatch):
    monkeypatch.setitem(__import__("skillhost.brokers._broker", fromlist=["x"]).PORT_CAPABILITY, "gate",
                        "runtime:time")
    gate = _Gate()
    broker = Broker("s", "e", ["runtime:time"], {"gate": gate}, granted=frozenset({"runtime:time"}))
    worker = threading.Thread(target=broker.call, args=("gate", "wait"))
    worker.start()
    while not broker.audit:
        pass
    broker.abandon("CC_SKILL_TIMEOUT")
    assert [(a["event"], a["code"]) for a in broker.audit] == [("start", None), ("abandoned", "CC_SKILL_TIMEOUT")]
    gate.release.set()
    worker.join(5)
    assert [a["event"] for a in broker.audit] == ["start", "abandoned", "late-done"]
    assert broker.audit[-1]["target"] == "gate"


def test_a_redirect_reached_through_a_decision_is_audited_under_that_decision(monkeypatch):
    from skillhost.brokers import Declassification

    decided = Declassification("d-9", "reviewer", "s", "a", "b.example.test", 443, 4_102_444_800)
    policy = EgressPolicy(allowed=frozenset({("a.example.test", 443)}), decisions=(decided,))
    https = HttpsPort(policy, resolver=lambda host, port: ["8.8.8.8"])
    hops = iter([(302, "https://b.example.test/next", "", b""), (200, None, "text/plain", b"ok")])
    monkeypatch.setattr(https, "_fetch", lambda target, address, deadline: next(hops))
    broker = Broker("s", "e", ["network:https"], {"https": https}, authority="a", granted=frozenset({"network:https"}))
    assert broker.call("https", "get", ["https://a.example.test/start"])["status"] == 200
    events = [(a["event"], a["target"]) for a in broker.audit]
    assert events == [("start", "a.example.test"), ("done", "d-9@b.example.test")]


def test_granted_is_required():
    with pytest.raises(TypeError):
        Broker("s", "e", ["runtime:time"], {"time": TimePort()})  # no default may stand for "everything"


def _host(tmp_path, authority, table, **kw):
    return SkillHost(HostConfig(workspace=tmp_path, trust=TrustStore({}), authority=authority,
                                authorities=table, **kw))


def test_ports_for_builds_only_the_ports_the_intersection_grants(tmp_path):
    table = {"reader": Authority("reader", frozenset({"runtime:time", "filesystem:read"}))}
    host = _host(tmp_path, "reader", table)
    ports = host.ports_for("s1", tier="bundled", capabilities={"runtime:time", "process:exec", "network:https"})
    assert sorted(ports) == ["time"]
    # So the broker's "approved port" check can fire: declared and granted, but never built for this run.
    broker = Broker("s1", "e", ["filesystem:read"], ports, granted=host.authority.capabilities)
    assert code_of(lambda: broker.call("fs", "read_text", ["x"])) == "CC_SKILL_PORT_UNAPPROVED"


def test_the_process_rules_entry_binding_compares_the_verified_entry(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git")
    rules = git_rules(entry_id("bundled", "repo-status", "a" * 64))
    mine = ProcessPort(tmp_path, rules, skill_id="repo-status", entry=entry_id("bundled", "repo-status", "a" * 64))
    assert mine.run(["git", "--version"])["returncode"] == 0
    drifted = ProcessPort(tmp_path, rules, skill_id="repo-status", entry=entry_id("bundled", "repo-status", "b" * 64))
    assert code_of(lambda: drifted.run(["git", "--version"])) == "CC_SKILL_PROCESS_DENIED"
    external = entry_id("external", "repo-status", "a" * 64)
    other_tier = ProcessPort(tmp_path, rules, skill_id="repo-status", entry=external)
    assert code_of(lambda: other_tier.run(["git", "--version"])) == "CC_SKILL_PROCESS_DENIED"


def test_the_host_binds_the_git_rules_to_the_entry_the_catalog_verified(tmp_path):
    host = _host(tmp_path, "cli", {"cli": Authority.everything("cli")})
    catalog = json.loads((APP_DIR / "skillhost" / "capability_catalog.json").read_text())
    digest = next(e["handler_sha256"] for e in catalog["skills"] if e["id"] == "repo-status")
    assert host.bundled_entry("repo-status") == f"bundled:repo-status:{digest}"


def test_loopback_services_are_bound_to_skill_and_authority():
    policy = LoopbackServices({"model": (8080,)}, skills={"model": frozenset({"a"})})
    services, withheld = policy.for_skill("b", lambda name: True)
    assert code_of(lambda: LoopbackPort(services, withheld).get("model", "/")) == "CC_SKILL_LOOPBACK_SERVICE_UNKNOWN"
    services, withheld = policy.for_skill("a", lambda name: False)
    assert code_of(lambda: LoopbackPort(services, withheld).get("model", "/")) == "CC_SKILL_AUTHORITY_DENIED"


def test_diagnostics_are_bound_to_skill_and_authority(tmp_path):
    everything = {"cli": Authority.everything("cli"),
                  "no-diag": Authority("no-diag", KNOWN_CAPABILITIES, process_rules=frozenset({"git-status"}))}
    policy = EgressPolicy(allowed=frozenset({("api.example.test", 443)}))
    common = {"egress": policy, "resolver": lambda h, p: ["8.8.8.8"], "diagnostic_skills": frozenset({"diag"})}
    caps = {"process:exec"}
    other = _host(tmp_path, "cli", everything, **common).ports_for("other", tier="external", capabilities=caps)
    assert code_of(lambda: other["process"].diagnose("ping", "api.example.test")) == "CC_SKILL_PROCESS_DENIED"
    narrowed = _host(tmp_path, "no-diag", everything, **common).ports_for("diag", tier="external", capabilities=caps)
    assert code_of(lambda: narrowed["process"].diagnose("ping", "api.example.test")) == "CC_SKILL_AUTHORITY_DENIED"
    bound = _host(tmp_path, "cli", everything, **common).ports_for("diag", tier="external", capabilities=caps)
    assert isinstance(bound["process"]._diagnostics, Diagnostics)


SWALLOW_MD = "---\nid: swallow\nexecution-capabilities:\n  - environment:read\n---\n"
SWALLOW_PY = '''"""Bundled test skill: reads keys it was not granted and swallows every refusal."""


def run(ports, args):
    for _ in range(args.get("calls", 1)):
        try:
            ports.env.get("not-granted")
        except Exception:
            pass
    return {"ok": True}
'''


@pytest.fixture
def swallowing_app(app_copy):
    """The app with one more bundled skill, catalogued, whose handler swallows its refusals."""
    pkg = app_copy / "skillhost"
    folder = pkg / "bundled_skills" / "swallow"
    folder.mkdir()
    (folder / "SKILL.md").write_text(SWALLOW_MD)
    (folder / "handler.py").write_text(SWALLOW_PY)
    catalog, problems = generate(pkg)
    assert problems == []
    (pkg / "capability_catalog.json").write_bytes(render(catalog))
    return pkg


def _swallow(pkg, calls):
    # An environment port that grants no key: every read is refused with CC_SKILL_ENV_KEY_DENIED.
    ports = default_ports([], env_values={})
    return run_bundled(pkg, "swallow", {"calls": calls}, ports=ports, granted=KNOWN_CAPABILITIES)


def test_a_bundled_handler_that_swallows_a_denial_ends_refused_with_it(swallowing_app):
    assert code_of(lambda: _swallow(swallowing_app, 1)) == "CC_SKILL_ENV_KEY_DENIED"


def test_a_bundled_handler_that_fills_the_audit_ends_refused_audit_full(swallowing_app):
    assert code_of(lambda: _swallow(swallowing_app, 400)) == AUDIT_FULL


TRAP_SCRIPT = r"""
import json, sys
from pathlib import Path
from skillhost.packaging import boundary_violations, read_package
root = Path(sys.argv[1])
read_package(root)
source = (root / "handler.py").read_text()
mode = sys.argv[2]
if mode == "exec-string":
    ns = {}
    exec(source, ns)
    ns["run"](None, {})
elif mode == "compile-path":
    exec(compile(source, str(root / "handler.py"), "exec"), {})
elif mode == "import":
    sys.path.insert(0, str(root))
    __import__("handler")
print(json.dumps(boundary_violations()))
"""


@pytest.mark.parametrize("mode", ["none", "exec-string", "compile-path", "import"])
def test_the_boundary_trap_catches_external_code_run_in_the_host(tmp_path, mode):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "SKILL.md").write_text("---\nid: pkg\nexecution-capabilities:\n  - runtime:time\n---\n")
    (root / "handler.py").write_text("def run(ports, args):\n    return {'ran': True}\n")
    env = dict(os.environ, PYTHONPATH=str(APP_DIR), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", TRAP_SCRIPT, str(root), mode], capture_output=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()[-800:]
    caught = json.loads(done.stdout)
    # Reading, hashing and parsing the package is what the host does; only running its code is caught.
    assert bool(caught) == (mode != "none"), caught


def test_the_hosts_own_static_audit_is_not_a_trap_hit(tmp_path):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "handler.py").write_text("def run(ports, args):\n    return 1\n")
    script = ("import json, sys; from skillhost.packaging import boundary_violations, read_package; "
              "from skillhost.packaging._source_audit import audit_external_source; "
              "_, files, _ = read_package(sys.argv[1]); audit_external_source(files['handler.py'].decode()); "
              "print(json.dumps(boundary_violations()))")
    env = dict(os.environ, PYTHONPATH=str(APP_DIR), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, env=env, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()[-800:]
    assert json.loads(done.stdout) == []


def test_the_journey_workspace_is_a_git_repository_with_a_known_status(tmp_path):
    from skillhost.journey._brokers import _repo_workspace

    if shutil.which("git") is None:
        pytest.skip("git")
    (tmp_path / "notes.txt").write_text("x\n")
    assert _repo_workspace(tmp_path) is None
    assert Path(tmp_path, ".git").is_dir()
