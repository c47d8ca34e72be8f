"""Guards no other test reached: bundle containment, file identity, time and quota budgets, caps, the audit cap."""

import os
import socket
import ssl
import time

import pytest
from skillhost._errors import SkillError
from skillhost.brokers._broker import MAX_AUDIT, Broker, TimePort, default_ports
from skillhost.brokers._egress import EgressPolicy, HttpsPort
from skillhost.brokers._env import MAX_KEYS, MAX_SNAPSHOT, MAX_VALUE, EnvironmentPort
from skillhost.host._bundled import run_bundled
from skillhost.host._runner import MAX_FRAME, run_external
from skillhost.packaging._catalog import read_bundled, verify
from skillhost.packaging._package import discover, sign_package, verify_for_execution
from skillhost.packaging._signing import TrustStore, new_key

# The one capability these runs use, granted explicitly (the broker has no default grant).
TIME = frozenset({"runtime:time"})

NAME = "stall.skillhost-test.test"


def code_of(fn):
    with pytest.raises(SkillError) as info:
        fn()
    return info.value.code


# -- the bundle: a bundled skill folder must be inside the bundle, not a link out of it --------------


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_bundled_skill_folder_linked_out_of_the_bundle_is_drift(app_copy, tmp_path):
    pkg = app_copy / "skillhost"
    outside = tmp_path / "elsewhere" / "clock"
    outside.parent.mkdir()
    (pkg / "bundled_skills" / "clock").rename(outside)
    (pkg / "bundled_skills" / "clock").symlink_to(outside, target_is_directory=True)
    # Same bytes, same digests: only the folder's place gives it away, and nothing of it is loaded.
    assert code_of(lambda: read_bundled(pkg, "clock")) == "CC_SKILL_CATALOG_DRIFT"
    assert code_of(lambda: verify(pkg)) == "CC_SKILL_CATALOG_DRIFT"
    assert code_of(lambda: run_bundled(pkg, "clock", {}, granted=frozenset())) == "CC_SKILL_CATALOG_DRIFT"


# -- external packages: the file discovery read is the file verification reads -------------------


def test_a_file_swapped_for_an_identical_copy_after_discovery_is_unstable(tmp_path):
    key = new_key()
    d = tmp_path / "demo"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nid: demo\nexecution-capabilities:\n  - runtime:time\n---\n")
    (d / "handler.py").write_text("def run(ports, args):\n    return {}\n")
    sign_package(d, key)
    cand = discover(d)
    # Same bytes under a new inode: the digests still match, the identity (device, inode) does not. The old file
    # is moved aside, not deleted, so its inode stays in use and the copy cannot get its number back (deleted, the
    # number could be reused at once, and the test failed at random).
    data = (d / "handler.py").read_bytes()
    (d / "handler.py").rename(tmp_path / "handler.py.discovered")
    (d / "handler.py").write_bytes(data)
    trust = TrustStore.from_public_keys([key.public_key()])
    assert code_of(lambda: verify_for_execution(cand, trust)) == "CC_SKILL_FILE_UNSTABLE"
    # Discovered afresh, the same package verifies.
    assert verify_for_execution(discover(d), trust).skill_id == "demo"


# -- egress: the time budget ----------------------------------------------------------------------


def test_egress_time_budget_ends_a_stalled_handshake():
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        port = listener.getsockname()[1]
        policy = EgressPolicy(allowed=frozenset({(NAME, port)}), timeout=0.5)

        def connect(address, timeout):
            # The public answer is routed to a listener that accepts the connection and never answers.
            assert address == ("203.0.114.7", port)
            return socket.create_connection(("127.0.0.1", port), timeout=timeout)

        https = HttpsPort(policy, resolver=lambda h, p: ["203.0.114.7"], ssl_context=ssl.create_default_context(),
                          connect=connect)
        started = time.monotonic()
        assert code_of(lambda: https.get(f"https://{NAME}:{port}/")) == "CC_SKILL_EGRESS_TIMEOUT"
        assert time.monotonic() - started < 5
    finally:
        listener.close()


# -- the bundled broker's quota, the environment caps ------------------------------------------------


def test_broker_quota_refuses_the_call_after_the_last_allowed_one():
    broker = Broker("s", "e", ["runtime:time"], {"time": TimePort()}, max_requests=3, granted=TIME)
    for _ in range(3):
        broker.call("time", "now")
    assert code_of(lambda: broker.call("time", "now")) == "CC_SKILL_QUOTA_EXCEEDED"
    assert broker.audit[-1]["event"] == "denied"
    assert broker.denials == ["CC_SKILL_QUOTA_EXCEEDED"]


def test_environment_key_count_and_snapshot_caps():
    assert code_of(lambda: EnvironmentPort({f"k{i}": "v" for i in range(MAX_KEYS + 1)})) == "CC_SKILL_ENV_GRANT_INVALID"
    assert len(EnvironmentPort({f"k{i}": "v" for i in range(MAX_KEYS)}).keys()) == MAX_KEYS
    per_key = MAX_VALUE
    count = MAX_SNAPSHOT // per_key + 1
    assert code_of(lambda: EnvironmentPort({f"k{i}": "v" * per_key for i in range(count)})) == (
        "CC_SKILL_ENV_GRANT_INVALID"
    )
    assert EnvironmentPort({f"k{i}": "v" * per_key for i in range(count - 1)}).keys()


# -- the host-to-worker frame cap ------------------------------------------------------------------


def test_a_host_frame_over_the_cap_is_refused_and_the_worker_reaped(tmp_path):
    from skillhost.packaging._package import VerifiedSkill

    verified = VerifiedSkill("demo", ["runtime:time"], "def run(ports, args):\n    return {}\n", "0" * 64, "t")
    out = run_external(verified, default_ports([]), {"blob": "x" * MAX_FRAME}, granted=TIME)
    assert (out.ok, out.code) == (False, "CC_SKILL_FRAME_TOO_LARGE")
    assert out.reaped
    assert out.worker_pid != os.getpid()


# -- the audit never drops a call ------------------------------------------------------------------


def test_at_the_audit_cap_calls_are_refused_with_a_code_not_run_unaudited():
    ran = []

    class CountingTime(TimePort):
        def now(self) -> str:
            ran.append(1)
            return super().now()

    broker = Broker("s", "e", ["runtime:time"], {"time": CountingTime()}, max_requests=10 * MAX_AUDIT, granted=TIME)
    allowed = 0
    while len(broker.audit) <= MAX_AUDIT - 3:
        broker.call("time", "now")
        allowed += 1
    assert code_of(lambda: broker.call("time", "now")) == "CC_SKILL_AUDIT_FULL"
    # Every call that ran has its start and done records; the refusal has the last one.
    assert len(ran) == allowed
    assert [a["event"] for a in broker.audit].count("done") == allowed
    assert len(broker.audit) <= MAX_AUDIT
    assert (broker.audit[-1]["event"], broker.audit[-1]["code"]) == ("overflow", "CC_SKILL_AUDIT_FULL")
    # And it stays refused: nothing runs once there is no room to record it.
    for _ in range(5):
        assert code_of(lambda: broker.call("time", "now")) == "CC_SKILL_AUDIT_FULL"
    assert len(ran) == allowed
    assert broker.denials[0] == "CC_SKILL_AUDIT_FULL"
    # Not one refusal is missing: the overflow record counts all six.
    assert broker.audit[-1]["target"] == "refused=6"
