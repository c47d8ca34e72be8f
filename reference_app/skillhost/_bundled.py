"""In-process execution of bundled (catalog-verified) skills."""

import builtins
import secrets

from skillhost._broker import Broker, HostPorts, default_ports
from skillhost._catalog import check_entry, verify
from skillhost._errors import SkillError

_REMOVED = ("open", "exec", "eval", "compile", "input", "breakpoint", "globals", "locals", "vars")


def run_bundled(pkg_dir, skill_id: str, args=None, log_sink=None):
    """Re-verify the bundled handler against the catalog right before loading it, then run it."""
    entries = verify(pkg_dir)
    entry = entries.get(skill_id)
    if entry is None:
        raise SkillError("CC_SKILL_NOT_FOUND", f"no bundled skill {skill_id[:40]!r}")
    manifest, handler = check_entry(pkg_dir, entry)
    # declared (SKILL.md) ∩ catalog ∩ approved host ports
    allowed = sorted(set(manifest["capabilities"]) & set(entry["capabilities"]))
    sink = [] if log_sink is None else log_sink
    broker = Broker(skill_id, secrets.token_hex(8), allowed, default_ports(sink))
    b = dict(vars(builtins))
    for name in _REMOVED:
        b.pop(name, None)
    namespace = {"__name__": f"bundled_skill_{skill_id.replace('-', '_')}", "__builtins__": b}
    code = compile(handler.decode("utf-8"), f"<bundled:{skill_id}>", "exec")
    exec(code, namespace)  # noqa: S102 - catalog-verified bundled handler
    value = namespace["run"](HostPorts(broker), dict(args or {}))
    return value, broker
