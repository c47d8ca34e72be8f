"""Network diagnostics through the process broker: fixed executables, argv built by the broker.

``process.diagnose(tool, host)`` runs one of a fixed set of tools (DNS lookup,
ping, traceroute, port check). The handler names the tool and a host; the host
must pass the egress broker's own rules first (an allow-listed or decided DNS
name whose every address is public), and the broker then builds the argv from
this platform's fixed template, substituting whole elements only: the checked
name, the checked address, the checked port. Nothing the handler wrote becomes
part of an argument, no shell runs, and the process broker's timeout, output
caps and minimal environment apply.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from skillhost._errors import SkillError

NAME, ADDRESS, PORT = "{name}", "{address}", "{port}"

# tool -> (executable name, argv after it with whole-element placeholders)
Template = tuple[str, tuple[str, ...]]
TEMPLATES: Mapping[str, Mapping[str, Template]] = {
    "linux": {
        "dns-lookup": ("getent", ("ahosts", NAME)),
        "ping": ("ping", ("-c", "1", "-W", "2", ADDRESS)),
        "traceroute": ("traceroute", ("-n", "-m", "10", "-w", "2", ADDRESS)),
        "port-check": ("nc", ("-z", "-w", "3", ADDRESS, PORT)),
    },
    "macos": {
        "dns-lookup": ("dscacheutil", ("-q", "host", "-a", "name", NAME)),
        "ping": ("ping", ("-c", "1", "-t", "2", ADDRESS)),
        "traceroute": ("traceroute", ("-n", "-m", "10", "-w", "2", ADDRESS)),
        "port-check": ("nc", ("-z", "-G", "3", ADDRESS, PORT)),
    },
    "windows": {
        "dns-lookup": ("nslookup", (NAME,)),
        "ping": ("ping", ("-n", "1", "-w", "2000", ADDRESS)),
        "traceroute": ("tracert", ("-d", "-h", "10", "-w", "2000", ADDRESS)),
    },
}

# (host name, port) -> the checked address; raises the egress broker's refusal otherwise.
DestinationCheck = Callable[[str, int], str]
# (host name, port) -> the destination as the audit names it (``<decision-id>@<host>`` through a decision).
DestinationLabel = Callable[[str, int], str]


def _platform() -> str:
    if sys.platform.startswith("win"):
        return "windows"
    return "macos" if sys.platform == "darwin" else "linux"


@dataclass(frozen=True)
class Diagnostic:
    tool: str
    argv: tuple[str, ...]  # argv[0] is the resolved absolute executable


class Diagnostics:
    """Builds a diagnostic's argv from a checked destination; runs nothing itself."""

    def __init__(
        self,
        check: DestinationCheck,
        platform: str | None = None,
        *,
        label: DestinationLabel | None = None,
        executables: Mapping[str, str] | None = None,
    ) -> None:
        self._check = check
        self._label = label
        templates = TEMPLATES[platform or _platform()]
        # Resolved once, now, like every process rule: a later PATH change cannot redirect a tool. A host may
        # name the absolute executable of a tool itself (``executables``); the argv template stays the fixed one.
        chosen = dict(executables or {})
        self._tools = {tool: (chosen.get(tool) or shutil.which(exe), args) for tool, (exe, args) in templates.items()}

    def label(self, host: object, port: object = 443) -> str:
        """The audit's name for a diagnostic's destination: the host, or ``<decision-id>@<host>``."""
        if not isinstance(host, str) or not isinstance(port, int) or isinstance(port, bool):
            return "?"
        return self._label(host, port) if self._label is not None else host[:64]

    def build(self, tool: object, host: object, port: object = 443) -> Diagnostic:
        if not isinstance(tool, str) or tool not in self._tools:
            raise SkillError("CC_SKILL_PROCESS_DENIED", "not one of the fixed diagnostics")
        if not isinstance(host, str) or not isinstance(port, int) or isinstance(port, bool):
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", "a diagnostic takes a host name and a port number")
        address = self._check(host, port)  # the egress rules: allow-list or decision, public addresses only
        exe, args = self._tools[tool]
        if not exe:
            raise SkillError("CC_SKILL_PROCESS_UNAVAILABLE", f"{tool}: executable not installed")
        values = {NAME: host, ADDRESS: address, PORT: str(port)}
        return Diagnostic(tool, (exe, *(values.get(a, a) for a in args)))
