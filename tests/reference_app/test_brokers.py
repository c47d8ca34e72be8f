"""Brokers: filesystem, process, environment, network (offline; the allow path uses a loopback TLS server)."""

import json
import os
import shutil
import ssl
import sys
from pathlib import Path

import pytest
from skillhost._errors import SkillError
from skillhost.brokers._broker import Broker
from skillhost.brokers._egress import EgressPolicy, HttpsPort
from skillhost.brokers._env import EnvGrants, EnvironmentPort
from skillhost.brokers._fs import FilesystemPort
from skillhost.brokers._process import ProcessPort, ProcessRule
from skillhost.journey._loopback_tls import SERVER_NAME, STAND_IN_ADDRESS, LoopbackTLSServer


def code_of(fn):
    with pytest.raises(SkillError) as ei:
        fn()
    return ei.value.code


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    (r / "a.txt").write_text("alpha\n")
    (r / "sub").mkdir()
    (r / "sub" / "b.txt").write_text("beta\n")
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    return r


# --- filesystem -------------------------------------------------------------------------------


def test_fs_reads_inside_root(root):
    fs = FilesystemPort(root)
    assert fs.read_text("a.txt") == "alpha\n"
    assert fs.read_text("sub/b.txt") == "beta\n"
    assert fs.list_dir(".") == ["a.txt", "sub"]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../secret.txt", "CC_SKILL_PATH_ESCAPE"),
        ("sub/../../secret.txt", "CC_SKILL_PATH_ESCAPE"),
        ("sub\\..\\..\\secret.txt", "CC_SKILL_PATH_ESCAPE"),
        ("/etc/passwd", "CC_SKILL_PATH_ESCAPE"),
        ("C:\\Windows\\win.ini", "CC_SKILL_PATH_ESCAPE"),
        ("", "CC_SKILL_PORT_BAD_ARGS"),
        ("a\x00.txt", "CC_SKILL_PORT_BAD_ARGS"),
        ("missing.txt", "CC_SKILL_FS_NOT_FOUND"),
        ("sub", "CC_SKILL_FS_NOT_FOUND"),
    ],
)
def test_fs_refusals(root, path, code):
    assert code_of(lambda: FilesystemPort(root).read_text(path)) == code


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_fs_symlink_escape_refused_but_inner_link_allowed(root):
    (root / "out.txt").symlink_to(root.parent / "secret.txt")
    (root / "outdir").symlink_to(root.parent)
    (root / "inner.txt").symlink_to(root / "a.txt")
    fs = FilesystemPort(root)
    assert code_of(lambda: fs.read_text("out.txt")) == "CC_SKILL_PATH_ESCAPE"
    assert code_of(lambda: fs.read_text("outdir/secret.txt")) == "CC_SKILL_PATH_ESCAPE"
    assert code_of(lambda: fs.list_dir("outdir")) == "CC_SKILL_PATH_ESCAPE"
    assert fs.read_text("inner.txt") == "alpha\n"


def test_fs_size_cap(root):
    (root / "big.txt").write_text("x" * 2000)
    assert code_of(lambda: FilesystemPort(root, max_file_bytes=1000).read_text("big.txt")) == "CC_SKILL_FILE_TOO_LARGE"


# --- process ----------------------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


@needs_git
def test_process_allow_listed_runs_with_minimal_env(root, monkeypatch):
    monkeypatch.setenv("SKILLHOST_TEST_SECRET", "do-not-pass")
    res = ProcessPort(root, skill_id="repo-status").run(["git", "status", "--porcelain"])
    assert res["command"] == "git-status"
    assert res["returncode"] == 128  # not a repository: git stops at the ceiling instead of walking up
    port = ProcessPort(root, skill_id="repo-status")
    env = port._env(port._rule(["git", "--version"]), shutil.which("git"))
    assert "SKILLHOST_TEST_SECRET" not in env
    assert env["HOME"] == os.path.realpath(root)
    assert env["GIT_CEILING_DIRECTORIES"] == str(Path(os.path.realpath(root)).parent)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["git", "log"], "CC_SKILL_PROCESS_DENIED"),
        (["git", "status", "--porcelain", "; touch pwned"], "CC_SKILL_PROCESS_DENIED"),
        (["git", "status", "--porcelain && touch pwned"], "CC_SKILL_PROCESS_DENIED"),
        (["sh", "-c", "touch pwned"], "CC_SKILL_PROCESS_DENIED"),
        (["/usr/bin/git", "status", "--porcelain"], "CC_SKILL_PROCESS_DENIED"),
        ("git status --porcelain", "CC_SKILL_PORT_BAD_ARGS"),
        ([], "CC_SKILL_PORT_BAD_ARGS"),
        (["git", 1], "CC_SKILL_PORT_BAD_ARGS"),
    ],
)
def test_process_refusals(root, argv, code):
    assert code_of(lambda: ProcessPort(root, skill_id="repo-status").run(argv)) == code
    assert not (root / "pwned").exists()


@needs_git
def test_process_cwd_escape(root):
    port = ProcessPort(root, skill_id="repo-status")
    assert code_of(lambda: port.run(["git", "--version"], cwd="..")) == "CC_SKILL_PATH_ESCAPE"


def test_process_timeout_and_output_caps(root, tmp_path):
    name = sys.executable  # an absolute argv[0]: shims on PATH would need the host PATH the broker withholds
    slow = ProcessRule("sleep", (name, "-c", "import time; time.sleep(5)"))
    loud = ProcessRule("loud", (name, "-c", "print('x' * 100000)"))
    port = ProcessPort(root, rules=(slow, loud), timeout=0.5, max_output=1024)
    assert code_of(lambda: port.run(list(slow.argv))) == "CC_SKILL_PROCESS_TIMEOUT"
    assert code_of(lambda: port.run(list(loud.argv))) == "CC_SKILL_PROCESS_OUTPUT_TOO_LARGE"


def test_process_missing_executable(root):
    port = ProcessPort(root, rules=(ProcessRule("nope", ("no-such-exe-skillhost", "x")),))
    assert code_of(lambda: port.run(["no-such-exe-skillhost", "x"])) == "CC_SKILL_PROCESS_UNAVAILABLE"


# --- environment ------------------------------------------------------------------------------


def test_env_logical_keys_per_skill_and_authority(monkeypatch):
    monkeypatch.setenv("HOME_SECRET", "host-value")
    grants = EnvGrants({"s1": {"auth-a": {"locale": "en-GB"}}})
    assert grants.port_for("s1", "auth-a", tier="bundled").get("locale") == "en-GB"
    assert code_of(lambda: grants.port_for("s1", "auth-b", tier="bundled").get("locale")) == "CC_SKILL_ENV_KEY_DENIED"
    assert code_of(lambda: grants.port_for("s2", "auth-a", tier="bundled").get("locale")) == "CC_SKILL_ENV_KEY_DENIED"
    assert code_of(lambda: grants.port_for("s1", "auth-a", tier="bundled").get("HOME_SECRET")) == (
        "CC_SKILL_ENV_KEY_DENIED"
    )
    # Same id, other tier: an external package named like a bundled skill gets none of its grants.
    assert code_of(lambda: grants.port_for("s1", "auth-a", tier="external").get("locale")) == (
        "CC_SKILL_ENV_KEY_DENIED"
    )


def test_env_grant_bounds():
    assert code_of(lambda: EnvironmentPort({"k": "x" * 5000})) == "CC_SKILL_ENV_GRANT_INVALID"
    assert code_of(lambda: EnvironmentPort({"bad key": "v"})) == "CC_SKILL_ENV_GRANT_INVALID"


def test_env_audit_has_key_not_value():
    broker = Broker("s1", "e1", ["environment:read"], {"env": EnvironmentPort({"token": "s3cr3t-value"})},
                    granted=frozenset({"environment:read"}))
    assert broker.call("env", "get", ["token"]) == "s3cr3t-value"
    with pytest.raises(SkillError):
        broker.call("env", "get", ["s3cr3t-guess"])
    text = json.dumps(broker.audit)
    assert "s3cr3t-value" not in text
    assert [(a["event"], a["target"]) for a in broker.audit] == [
        ("start", "token"),
        ("done", "token"),
        ("start", "s3cr3t-guess"),
        ("denied", "s3cr3t-guess"),
    ]


# --- network ----------------------------------------------------------------------------------


def fixed(answers):
    return lambda host, port: list(answers.get(host, []))


ALLOWED = frozenset({("api.example.test", 443), ("mixed.example.test", 443), ("v6.example.test", 443)})


@pytest.mark.parametrize(
    ("url", "answers", "code"),
    [
        ("http://api.example.test/", {}, "CC_SKILL_EGRESS_SCHEME_DENIED"),
        ("ftp://api.example.test/", {}, "CC_SKILL_EGRESS_SCHEME_DENIED"),
        ("https://93.184.216.34/", {}, "CC_SKILL_EGRESS_IP_LITERAL"),
        ("https://[2606:2800:220:1::1]/", {}, "CC_SKILL_EGRESS_IP_LITERAL"),
        ("https://0x7f.1/", {}, "CC_SKILL_EGRESS_IP_LITERAL"),
        ("https://2130706433/", {}, "CC_SKILL_EGRESS_IP_LITERAL"),
        ("https://evil.example.test/", {}, "CC_SKILL_EGRESS_HOST_DENIED"),
        ("https://sub.api.example.test/", {}, "CC_SKILL_EGRESS_HOST_DENIED"),
        ("https://api.example.test:8443/", {}, "CC_SKILL_EGRESS_HOST_DENIED"),
        ("https://api.example.test@evil.example.test/", {}, "CC_SKILL_EGRESS_HOST_DENIED"),
        ("https://api.example.test/", {}, "CC_SKILL_EGRESS_DNS_FAILED"),
        ("https://api.example.test/", {"api.example.test": ["10.0.0.5"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://api.example.test/", {"api.example.test": ["127.0.0.1"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://api.example.test/", {"api.example.test": ["169.254.169.254"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://api.example.test/", {"api.example.test": ["224.0.0.1"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://api.example.test/", {"api.example.test": ["100.64.0.1"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://v6.example.test/", {"v6.example.test": ["::1"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://v6.example.test/", {"v6.example.test": ["fe80::1"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("https://v6.example.test/", {"v6.example.test": ["::ffff:10.0.0.1"]}, "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        (
            "https://mixed.example.test/",
            {"mixed.example.test": ["93.184.216.34", "192.168.1.1"]},
            "CC_SKILL_EGRESS_ADDRESS_DENIED",
        ),
        ("https://api.example.test/a b", {}, "CC_SKILL_PORT_BAD_ARGS"),
        ("https://api.example.test/\r\nX: y", {}, "CC_SKILL_PORT_BAD_ARGS"),
    ],
)
def test_egress_refusals_offline(url, answers, code):
    # The injected resolver is the only "DNS"; every case is refused before any socket is opened.
    port = HttpsPort(EgressPolicy(allowed=ALLOWED), resolver=fixed(answers))
    assert code_of(lambda: port.get(url)) == code


@pytest.mark.parametrize(
    "allowed",
    [frozenset({("*.example.test", 443)}), frozenset({("10.0.0.1", 443)}), frozenset({("localhost", 443)})],
)
def test_egress_policy_rejects_wildcards_and_ip_literals(allowed):
    assert code_of(lambda: EgressPolicy(allowed=allowed)) == "CC_SKILL_EGRESS_POLICY_INVALID"


def test_egress_refuses_unverifying_tls_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    assert code_of(lambda: HttpsPort(EgressPolicy(), ssl_context=ctx)) == "CC_SKILL_EGRESS_POLICY_INVALID"


@pytest.fixture(scope="module")
def tls_server():
    with LoopbackTLSServer() as srv:
        yield srv


def loopback_port(srv, public=True, max_bytes=16 * 1024, name=SERVER_NAME):
    """``public``: the server's name resolves to the stand-in public address its connector routes to the server;
    otherwise to 127.0.0.1, which public egress refuses."""
    policy = EgressPolicy(allowed=frozenset({(name, srv.port)}), max_bytes=max_bytes)
    resolver = srv.public_resolver if public else srv.resolver
    return HttpsPort(policy, resolver=resolver, ssl_context=srv.client_context(), connect=srv.connect)


def test_egress_allow_path_pinned_with_sni_and_host(tls_server):
    port = loopback_port(tls_server)
    res = port.get(f"https://{SERVER_NAME}:{tls_server.port}/host")
    assert res["status"] == 200
    assert res["body"] == f"host={SERVER_NAME}:{tls_server.port}"
    res = port.get(f"https://{SERVER_NAME}:{tls_server.port}/redirect-in")
    assert (res["status"], res["redirects"], res["body"]) == (200, 1, "hello from the loopback server")


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/redirect-out", "CC_SKILL_EGRESS_REDIRECT_DENIED"),
        ("/redirect-http", "CC_SKILL_EGRESS_REDIRECT_DENIED"),
        ("/redirect-loop", "CC_SKILL_EGRESS_REDIRECT_DENIED"),
        ("/big", "CC_SKILL_EGRESS_TOO_LARGE"),
    ],
)
def test_egress_loopback_refusals(tls_server, path, code):
    assert code_of(lambda: loopback_port(tls_server).get(f"https://{SERVER_NAME}:{tls_server.port}{path}")) == code


def test_egress_loopback_resolution_is_refused_there_is_no_exemption(tls_server):
    port = loopback_port(tls_server, public=False)
    url = f"https://{SERVER_NAME}:{tls_server.port}/hello"
    assert code_of(lambda: port.get(url)) == "CC_SKILL_EGRESS_ADDRESS_DENIED"


def test_egress_certificate_must_match_the_name(tls_server):
    # Same server, reached under another allow-listed name: the certificate does not name it.
    other = "other.skillhost-journey.test"
    policy = EgressPolicy(allowed=frozenset({(other, tls_server.port)}))
    port = HttpsPort(policy, resolver=lambda h, p: [STAND_IN_ADDRESS], ssl_context=tls_server.client_context(),
                     connect=tls_server.connect)
    assert code_of(lambda: port.get(f"https://{other}:{tls_server.port}/hello")) == "CC_SKILL_EGRESS_TLS_FAILED"


def test_egress_untrusted_certificate(tls_server):
    policy = EgressPolicy(allowed=frozenset({(SERVER_NAME, tls_server.port)}))
    port = HttpsPort(policy, resolver=tls_server.public_resolver, ssl_context=ssl.create_default_context(cadata=None),
                     connect=tls_server.connect)
    assert code_of(lambda: port.get(f"https://{SERVER_NAME}:{tls_server.port}/hello")) == "CC_SKILL_EGRESS_TLS_FAILED"


def test_broker_audits_host_only(tls_server):
    broker = Broker("fetch", "e1", ["network:https"], {"https": loopback_port(tls_server)}, authority="auth-1",
                    granted=frozenset({"network:https"}))
    broker.call("https", "get", [f"https://{SERVER_NAME}:{tls_server.port}/hello?token=abc123"])
    text = json.dumps(broker.audit)
    assert "abc123" not in text
    assert [(a["event"], a["target"], a["authority"]) for a in broker.audit] == [
        ("start", SERVER_NAME, "auth-1"),
        ("done", SERVER_NAME, "auth-1"),
    ]
