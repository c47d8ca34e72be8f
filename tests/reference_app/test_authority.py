"""The authority term of the intersection: what the host's ports offer, narrowed to the current authority."""

import pytest
from skillhost._errors import SkillError
from skillhost.brokers._broker import Broker
from skillhost.brokers._egress import EgressPolicy
from skillhost.brokers._env import EnvGrants
from skillhost.brokers._process import ProcessRule
from skillhost.host._authority import Authority, lookup
from skillhost.host._host import HostConfig, SkillHost
from skillhost.packaging._manifest import KNOWN_CAPABILITIES
from skillhost.packaging._signing import TrustStore

DENIED = "CC_SKILL_AUTHORITY_DENIED"
RULES = (ProcessRule("py-version", ("python3", "--version")), ProcessRule("git-version", ("git", "--version")))


def code_of(fn):
    try:
        fn()
    except SkillError as exc:
        return exc.code
    return None


def _host(tmp_path, authority, table, **extra):
    cfg = HostConfig(workspace=tmp_path, trust=TrustStore.from_public_keys([]), authority=authority,
                     authorities=table, process_rules=RULES, **extra)
    return SkillHost(cfg)


def test_unknown_authority_name_grants_nothing():
    table = {"cli": Authority.everything("cli")}
    assert lookup(table, "cli").capabilities == KNOWN_CAPABILITIES
    assert lookup(table, "somebody-else").capabilities == frozenset()
    # A table entry filed under another name is not that name's authority.
    assert lookup({"cli": Authority.everything("admin")}, "cli").capabilities == frozenset()


def test_authority_refuses_bad_names_and_unknown_capabilities():
    assert code_of(lambda: Authority("Bad Name", frozenset())) == "CC_SKILL_USAGE"
    assert code_of(lambda: Authority("a", frozenset({"process:shell"}))) == "CC_SKILL_CAPABILITY_UNKNOWN"


def test_broker_refuses_a_declared_capability_the_authority_does_not_grant_and_audits_the_authority(tmp_path):
    host = _host(tmp_path, "reader", {"reader": Authority("reader", frozenset({"runtime:time"}))})
    ports = host.ports_for("s1", tier="bundled", capabilities=KNOWN_CAPABILITIES)
    broker = Broker("s1", "e1", ["runtime:time", "process:exec"], ports, authority="reader",
                    granted=host.authority.capabilities)
    assert isinstance(broker.call("time", "now"), str)
    with pytest.raises(SkillError) as info:
        broker.call("process", "run", [["git", "--version"]])
    assert info.value.code == DENIED
    assert {a["authority"] for a in broker.audit} == {"reader"}
    assert [(a["event"], a["port"], a["code"]) for a in broker.audit][-1] == ("denied", "process", DENIED)


def test_process_rules_narrowed_to_the_authority(tmp_path):
    table = {"v": Authority("v", KNOWN_CAPABILITIES, process_rules=frozenset({"git-version"}))}
    proc = _host(tmp_path, "v", table).ports_for("s1", tier="bundled", capabilities=KNOWN_CAPABILITIES)["process"]
    assert code_of(lambda: proc.run(["python3", "--version"])) == DENIED
    # Not on the host's list at all: the ordinary refusal, not the authority's.
    assert code_of(lambda: proc.run(["git", "log"])) == "CC_SKILL_PROCESS_DENIED"
    assert proc.audit_target("run", [["python3", "--version"]], {}) == "py-version"


def test_egress_destinations_narrowed_to_the_authority(tmp_path):
    policy = EgressPolicy(allowed=frozenset({("a.example.test", 443), ("b.example.test", 443)}))
    table = {"a-only": Authority("a-only", KNOWN_CAPABILITIES, egress=frozenset({("a.example.test", 443)}))}
    host = _host(tmp_path, "a-only", table, egress=policy, resolver=lambda h, p: [])
    https = host.ports_for("s1", tier="bundled", capabilities=KNOWN_CAPABILITIES)["https"]
    assert code_of(lambda: https.get("https://b.example.test/x")) == DENIED
    # Granted: goes on to resolution (which this resolver fails), i.e. past the authority.
    assert code_of(lambda: https.get("https://a.example.test/x")) == "CC_SKILL_EGRESS_DNS_FAILED"
    assert code_of(lambda: https.get("https://c.example.test/x")) == "CC_SKILL_EGRESS_HOST_DENIED"


def test_environment_keys_narrowed_to_the_authority(tmp_path):
    grants = EnvGrants({"s1": {"k": {"locale": "en-GB", "token": "t0k3n"}}})
    table = {"k": Authority("k", KNOWN_CAPABILITIES, env_keys=frozenset({"locale"}))}
    host = _host(tmp_path, "k", table, env_grants=grants)
    env = host.ports_for("s1", tier="bundled", capabilities=KNOWN_CAPABILITIES)["env"]
    assert env.get("locale") == "en-GB"
    assert code_of(lambda: env.get("token")) == DENIED
    assert env.keys() == ["locale"]
    assert code_of(lambda: env.get("missing")) == "CC_SKILL_ENV_KEY_DENIED"


def test_the_command_line_default_authority_grants_what_the_host_offers(tmp_path):
    host = SkillHost(HostConfig(workspace=tmp_path, trust=TrustStore.from_public_keys([])))
    assert host.config.authority == "cli"
    assert host.authority.capabilities == KNOWN_CAPABILITIES
    value, broker = host.run_bundled("host-info")
    assert value["platform"] in ("linux", "macos", "windows")
    assert {a["authority"] for a in broker.audit} == {"cli"}


def test_a_bundled_skill_under_an_authority_without_its_capability_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("a\nb\n", encoding="utf-8")
    host = _host(tmp_path, "none", {})
    assert code_of(lambda: host.run_bundled("read-notes", {"path": "notes.txt"})) == DENIED


def test_process_rules_are_bound_to_skill_id_and_entry_point(tmp_path):
    from skillhost.brokers._process import ProcessPort, git_rules

    rule = ProcessRule("py-version", ("python3", "--version"), skills=frozenset({"a"}), entry="handler.py")
    assert code_of(lambda: ProcessPort(tmp_path, (rule,), skill_id="b").run(["python3", "--version"])) == (
        "CC_SKILL_PROCESS_DENIED"
    )
    other_entry = ProcessPort(tmp_path, (rule,), skill_id="a", entry="other.py")
    assert code_of(lambda: other_entry.run(["python3", "--version"])) == "CC_SKILL_PROCESS_DENIED"
    # The default git rules are reviewed for the bundled repo-status skill only, under any authority.
    assert {r.skills for r in git_rules()} == {frozenset({"repo-status"})}
    host = _host(tmp_path, "cli", {"cli": Authority.everything("cli")})
    host.config.process_rules = None
    proc = host.ports_for("someone-else", tier="external", capabilities=KNOWN_CAPABILITIES)["process"]
    assert code_of(lambda: proc.run(["git", "--version"])) == "CC_SKILL_PROCESS_DENIED"


# -- run-time domains: a declassification decision per skill and authority ---------------------------


def _decision(**over):
    import time

    from skillhost.brokers._egress import Declassification

    fields = {"decision_id": "d-1", "decided_by": "reviewer", "skill_id": "s1", "authority": "cli",
              "host": "runtime.example.test", "port": 443, "expires_at": time.time() + 60}
    fields.update(over)
    return Declassification(**fields)


def test_a_decision_must_name_who_decided_and_an_exact_destination():
    assert code_of(lambda: _decision(decided_by="")) == "CC_SKILL_EGRESS_POLICY_INVALID"
    assert code_of(lambda: _decision(decision_id="D 1")) == "CC_SKILL_EGRESS_POLICY_INVALID"
    assert code_of(lambda: _decision(host="10.0.0.1")) == "CC_SKILL_EGRESS_POLICY_INVALID"
    assert code_of(lambda: _decision(host="*.example.test")) == "CC_SKILL_EGRESS_POLICY_INVALID"


def test_a_runtime_destination_needs_a_live_decision_for_this_skill_and_authority(tmp_path):
    import time

    policy = EgressPolicy(decisions=(_decision(), _decision(decision_id="d-2", host="old.example.test",
                                                            expires_at=time.time() - 1)))
    host = _host(tmp_path, "cli", {"cli": Authority.everything("cli")}, egress=policy, resolver=lambda h, p: [])
    https = host.ports_for("s1", tier="bundled", capabilities=KNOWN_CAPABILITIES)["https"]
    # Decided: past the allow-list, on to the same DNS rules (this resolver answers nothing).
    assert code_of(lambda: https.get("https://runtime.example.test/x")) == "CC_SKILL_EGRESS_DNS_FAILED"
    assert https.audit_target("get", ["https://runtime.example.test/x?t=1"], {}) == "d-1@runtime.example.test"
    assert code_of(lambda: https.get("https://old.example.test/x")) == "CC_SKILL_EGRESS_DECISION_EXPIRED"
    # Another skill, or the same skill under another authority: not decided for them.
    other = host.ports_for("s2", tier="bundled", capabilities=KNOWN_CAPABILITIES)["https"]
    assert code_of(lambda: other.get("https://runtime.example.test/x")) == "CC_SKILL_EGRESS_HOST_DENIED"
    table = {"cli": Authority.everything("cli"), "task": Authority.everything("task")}
    task_host = _host(tmp_path, "task", table, egress=policy, resolver=lambda h, p: [])
    task = task_host.ports_for("s1", tier="bundled", capabilities=KNOWN_CAPABILITIES)
    assert code_of(lambda: task["https"].get("https://runtime.example.test/x")) == "CC_SKILL_EGRESS_HOST_DENIED"


def test_a_decided_destination_still_resolves_publicly():
    policy = EgressPolicy(decisions=(_decision(),))
    from skillhost.brokers._egress import HttpsPort

    https = HttpsPort(policy, resolver=lambda h, p: ["127.0.0.1"])
    assert code_of(lambda: https.get("https://runtime.example.test/x")) == "CC_SKILL_EGRESS_ADDRESS_DENIED"
