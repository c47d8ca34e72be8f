"""In-process execution of bundled (catalog-verified) skills.

Trust tier 1 (docs/design.md §9.1): a bundled handler is loaded in the host process only
after the catalog check passes *right now*: the skill lives inside the app
package, and its SKILL.md capability set, handler SHA-256 and ``ast`` audit all
agree with the generated catalog (``CC_SKILL_CATALOG_DRIFT`` otherwise). Even
then it gets no raw modules: every effect goes through the broker.
"""

from __future__ import annotations

import builtins
import hashlib
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillhost._errors import SkillError
from skillhost.brokers import AUDIT_FULL, AuditEvent, Broker, HostPorts, default_ports, entry_id
from skillhost.packaging import ALLOWED_IMPORTS, check_entry, verify_catalog

# Builds a run's ports from what the checks established: the capabilities declared ∩ catalogued, and the entry
# the catalog verified (``entry_id``), which the process rules are bound to.
PortFactory = Callable[[frozenset[str], str], dict[str, Any]]

_REMOVED = ("open", "exec", "eval", "compile", "input", "breakpoint", "globals", "locals", "vars")


class BundledRefusalError(SkillError):
    """A bundled run a denial decided. It keeps the run's audit (the overflow record included), so a refused
    run's records are not lost with its broker."""

    def __init__(self, code: str, message: str, audit: list[AuditEvent]) -> None:
        super().__init__(code, message)
        self.audit = audit


def _guarded_import(name: str, *args: Any, **kwargs: Any) -> Any:
    # The ast audit already refuses raw imports; this keeps the rule at run time as well.
    level = args[3] if len(args) > 3 else kwargs.get("level", 0)
    if name.split(".", maxsplit=1)[0] not in ALLOWED_IMPORTS or level:
        raise SkillError("CC_SKILL_IMPORT_DENIED", f"bundled handler import {name[:40]!r}")
    return builtins.__import__(name, *args, **kwargs)


def run_bundled(  # noqa: PLR0917 - kept positional for existing callers
    pkg_dir: Path,
    skill_id: str,
    args: dict[str, Any] | None = None,
    log_sink: list[dict[str, str]] | None = None,
    ports: dict[str, Any] | PortFactory | None = None,
    authority: str = "host",
    *,
    granted: frozenset[str],
) -> tuple[Any, Broker]:
    """Re-verify the bundled handler against the catalog right before loading it, then run it.

    A denial is authoritative: a run in which the broker refused any call ends refused with that refusal's
    code (``CC_SKILL_AUDIT_FULL`` once the audit stopped the run), whatever the handler did with the error.
    """
    entries = verify_catalog(pkg_dir)
    entry = entries.get(skill_id)
    if entry is None:
        raise SkillError("CC_SKILL_NOT_FOUND", f"no bundled skill {skill_id[:40]!r}")
    manifest, handler = check_entry(pkg_dir, entry)
    # declared (SKILL.md) ∩ catalog; the broker then adds the authority's grants and the ports' own policy.
    allowed = sorted(set(manifest["capabilities"]) & set(entry["capabilities"]))
    sink = [] if log_sink is None else log_sink
    entry_point = entry_id("bundled", skill_id, hashlib.sha256(handler).hexdigest())
    if callable(ports):
        approved = ports(frozenset(allowed), entry_point)
    else:
        approved = default_ports(sink) if ports is None else ports
    broker = Broker(skill_id, secrets.token_hex(8), allowed, approved, authority=authority, granted=granted)
    b = dict(vars(builtins))
    for name in _REMOVED:
        b.pop(name, None)
    b["__import__"] = _guarded_import
    namespace: dict[str, Any] = {"__name__": f"bundled_skill_{skill_id.replace('-', '_')}", "__builtins__": b}
    code = compile(handler.decode("utf-8"), f"<bundled:{skill_id}>", "exec")
    exec(code, namespace)  # noqa: S102 - catalog-verified bundled handler
    try:
        value = namespace["run"](HostPorts(broker), dict(args or {}))
    except Exception:
        if not broker.denials:
            raise
    if broker.denials:
        # A denial is authoritative even if the handler swallowed the exception (or raised another one).
        refusal = AUDIT_FULL if broker.audit_full else broker.denials[0]
        raise BundledRefusalError(refusal, "host broker denied a capability request", broker.audit)
    return value, broker
