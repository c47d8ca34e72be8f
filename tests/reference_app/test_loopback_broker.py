"""The loopback service broker: named services on 127.0.0.1 at listed ports, separate from public egress."""

import json

import pytest
from skillhost._errors import SkillError
from skillhost.brokers._broker import Broker
from skillhost.brokers._loopback import LoopbackPort, LoopbackServices
from skillhost.journey._loopback_tls import LoopbackHTTPServer


def code_of(fn):
    with pytest.raises(SkillError) as info:
        fn()
    return info.value.code


@pytest.fixture(scope="module")
def model():
    with LoopbackHTTPServer() as srv:
        yield srv


def test_a_listed_service_on_a_listed_port_answers(model):
    port = LoopbackPort(LoopbackServices({"model": (model.port,)}))
    assert port.get("model", "/hello") == {
        "status": 200, "content_type": "text/plain; charset=utf-8", "body": "hello from the loopback server"}
    assert port.get("model", "/hello", model.port)["status"] == 200


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("metrics", "/hello"), "CC_SKILL_LOOPBACK_SERVICE_UNKNOWN"),
        (("model", "/hello", 1), "CC_SKILL_LOOPBACK_PORT_DENIED"),
        (("model", "/hello", True), "CC_SKILL_LOOPBACK_PORT_DENIED"),
        (("model", "http://evil.test/"), "CC_SKILL_PORT_BAD_ARGS"),
        (("model", "/a b"), "CC_SKILL_PORT_BAD_ARGS"),
        (("model", "/\r\nX: y"), "CC_SKILL_PORT_BAD_ARGS"),
    ],
)
def test_refusals(model, args, code):
    port = LoopbackPort(LoopbackServices({"model": (model.port,)}))
    assert code_of(lambda: port.get(*args)) == code


def test_byte_cap(model):
    port = LoopbackPort(LoopbackServices({"model": (model.port,)}, max_bytes=1024))
    assert code_of(lambda: port.get("model", "/big")) == "CC_SKILL_LOOPBACK_TOO_LARGE"


def test_policy_needs_names_and_ports():
    assert code_of(lambda: LoopbackServices({"Model": (1,)})) == "CC_SKILL_LOOPBACK_POLICY_INVALID"
    assert code_of(lambda: LoopbackServices({"model": ()})) == "CC_SKILL_LOOPBACK_POLICY_INVALID"
    assert code_of(lambda: LoopbackServices({"model": (70000,)})) == "CC_SKILL_LOOPBACK_POLICY_INVALID"


def test_the_audit_names_the_service_never_the_path(model):
    ports = {"loopback": LoopbackPort(LoopbackServices({"model": (model.port,)}))}
    broker = Broker("s", "e", ["service:loopback"], ports, authority="a", granted=frozenset({"service:loopback"}))
    broker.call("loopback", "get", ["model", "/hello?token=abc123"])
    assert "abc123" not in json.dumps(broker.audit)
    assert [(a["event"], a["target"], a["capability"]) for a in broker.audit] == [
        ("start", "model", "service:loopback"), ("done", "model", "service:loopback")]
