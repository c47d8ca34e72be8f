"""The brokers: every effect a skill has goes through one port the host audits.

``Broker`` checks each call against declared ∩ catalog or signed manifest ∩
authority ∩ broker policy and audits it; the ports are time and logger
(``default_ports``), environment (``EnvGrants``), filesystem, process (with the
network diagnostics), HTTPS egress and loopback services.
"""

from skillhost.brokers._broker import (
    AUDIT_FULL,
    MAX_AUDIT,
    MAX_REQUESTS,
    AuditEvent,
    Broker,
    HostPorts,
    LoggerPort,
    TimePort,
    default_ports,
)
from skillhost.brokers._diagnostics import Diagnostics
from skillhost.brokers._egress import Connector, Declassification, EgressPolicy, HttpsPort, Resolver, system_resolver
from skillhost.brokers._env import EnvGrants
from skillhost.brokers._fs import FilesystemPort
from skillhost.brokers._loopback import LoopbackPort, LoopbackServices
from skillhost.brokers._process import ProcessPort, ProcessRule, entry_id, git_rules

__all__ = [
    "AUDIT_FULL", "MAX_AUDIT", "MAX_REQUESTS", "AuditEvent", "Broker", "Connector", "Declassification", "Diagnostics",
    "EgressPolicy", "EnvGrants", "FilesystemPort", "HostPorts", "HttpsPort", "LoggerPort", "LoopbackPort",
    "LoopbackServices", "ProcessPort", "ProcessRule", "Resolver", "TimePort", "default_ports", "entry_id", "git_rules",
    "system_resolver",
]  # fmt: skip
