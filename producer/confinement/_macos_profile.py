"""macOS: the Sandbox Profile Language (SBPL) profile ``sandbox-exec`` applies to one app stage.

Standard library only. The profile starts from ``(deny default)`` and allows what the ``StageSandbox``
names and the little every process needs; each rule follows a comment saying why. Paths are the stage's
own, resolved as the kernel sees them (``/tmp`` is ``/private/tmp``), written as SBPL string literals (a
quote or a backslash escaped; a control character refused, ``_checks.clean_path``), so no folder name can
close a string and add a rule. The protected paths are denied last: in SBPL the last matching rule wins,
so no allow above can reopen them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ._checks import bound_paths, clean_path
from ._stage import ConfinementError, StageSandbox, sealed

# Read-only system folders every process needs (path, why). Nothing here holds a user's data.
SYSTEM_READ: tuple[tuple[str, str], ...] = (
    ("/usr/lib", "dyld, libSystem and the system's libraries: every process maps them"),
    ("/usr/share", "time zones, locales, terminfo and the system's data files"),
    ("/System", "the frameworks and the dyld shared cache (the sealed, read-only system volume)"),
    ("/Library/Apple", "Apple's own frameworks and Rosetta's translation libraries"),
    ("/private/var/db/dyld", "the dyld shared cache on older macOS"),
    ("/private/var/db/timezone", "the time-zone database localtime() reads"),
    ("/Library/Developer/CommandLineTools", "the command-line developer tools a build's clang and git are"),
)
# Folders whose programs app code may run, besides its own toolchain (the system's shells and tools).
SYSTEM_EXEC = ("/bin", "/usr/bin", "/usr/sbin", "/usr/libexec", "/Library/Developer/CommandLineTools")
# Xcode, wherever the runner image installed it (``/Applications/Xcode_15.4.app``): read and run, never written.
XCODE = '(regex #"^/Applications/Xcode[^/]*\\.app(/|$)")'
# Mach services libSystem itself calls during an ordinary process's life (name, why).
MACH_SERVICES = (
    ("com.apple.system.notification_center", "libnotify: localtime() registers for time-zone changes"),
    ("com.apple.system.opendirectoryd.libinfo", "getpwuid(): a process looks up its own user record"),
    ("com.apple.logd", "os_log: the system's libraries log through it"),
)
# What a stage with the network needs besides the outbound sockets: name resolution and certificate checks.
NETWORK_READ = ("/private/etc/hosts", "/private/etc/resolv.conf", "/private/var/run/resolv.conf",
                "/private/etc/services", "/private/etc/protocols", "/private/etc/ssl")
NETWORK_MACH = ("com.apple.dnssd.service", "com.apple.trustd", "com.apple.trustd.agent")
MDNS_SOCKET = "/private/var/run/mDNSResponder"
# The only rules that may stand without a filter: an allow with no filter allows everywhere, so any other
# operation left without a path (an empty list of paths) is refused rather than written.
UNFILTERED = frozenset({"(allow process-fork)", "(allow sysctl-read)", "(allow ipc-posix-sem)",
                        "(allow system-socket)", "(allow network-outbound)"})


def sbpl_string(text: str) -> str:
    """``text`` as an SBPL (TinyScheme) string literal: backslash and quote escaped, control characters refused."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ConfinementError(f"{text!r} holds a control character and cannot be written into a profile")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _real(path: Path) -> str:
    """The path as the kernel reports it to the sandbox: symlinks resolved (``/var`` is ``/private/var``)."""
    return str(path.resolve())


def _filters(kind: str, paths: Iterable[str]) -> str:
    return " ".join(f"({kind} {sbpl_string(p)})" for p in dict.fromkeys(paths))


def _ancestors(paths: Iterable[str]) -> list[str]:
    """Every folder above the given paths, root first: stat-ed one by one when a path is resolved."""
    found: dict[str, None] = {}
    for path in paths:
        for parent in reversed(PurePosixPath(path).parents):
            found[str(parent)] = None
    return list(found)


def profile(sandbox: StageSandbox) -> str:
    """The whole profile for ``sandbox`` (module docstring); raises ``ConfinementError`` on a refused path."""
    bound = bound_paths(sandbox)
    real = {what: [_real(p) for w, p in bound if w == what] for what in ("toolchain", "readable", "writable",
                                                                          "socket")}
    stage = real["toolchain"] + real["readable"] + real["writable"]
    rules: list[tuple[str, str]] = [
        ("(allow process-fork)", "a build runs compilers, a journey starts the app: app code starts processes"),
        (f"(allow process-exec {_filters('subpath', [*SYSTEM_EXEC, *stage])} {XCODE})",
         "programs of the system, the toolchain, the stage's inputs and what it built; nothing else"),
        (f"(allow file-read* {_filters('subpath', [p for p, _ in SYSTEM_READ])} {XCODE})",
         "\n".join([*(f"{p}: {why}" for p, why in SYSTEM_READ), "Xcode: the SDKs and compilers it holds"])),
        (f"(allow file-map-executable {_filters('subpath', [p for p, _ in SYSTEM_READ])} "
         f"{_filters('subpath', stage)} {XCODE})",
         "libraries are mapped executable: the system's, the toolchain's and the extension modules a build made"),
        (f"(allow file-read* {_filters('subpath', stage)})",
         "the stage's toolchain, its inputs and its own folders (HOME and TMPDIR among them)"),
        (f"(allow file-read-metadata {_filters('literal', _ancestors(stage))})",
         "the folders above each given path, for stat() while a path is resolved (no listing, no contents)"),
        (f"(allow file-write* {_filters('subpath', real['writable'])})",
         "the stage's own folders only: its source copy, its output, its HOME and TMPDIR"),
        ('(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero") (subpath "/dev/fd"))',
         "discarding output, zero pages, and /dev/fd for a shell's process substitution"),
        ('(allow file-read* (literal "/dev/random") (literal "/dev/urandom") (literal "/private/etc/localtime"))',
         "the random devices every runtime seeds from, and the local time zone"),
        ("(allow sysctl-read)", "libSystem and runtimes read the CPU count, page size and OS version"),
        (f"(allow mach-lookup {' '.join(f'(global-name {sbpl_string(n)})' for n, _ in MACH_SERVICES)})",
         "\n".join(f"{n}: {why}" for n, why in MACH_SERVICES)),
        ("(allow ipc-posix-sem)", "named semaphores (Python's multiprocessing locks); other accounts' are "
         "refused by their owner's permissions"),
        ("(allow signal (target same-sandbox))", "a build stops its own children; nothing outside the stage"),
        ("(allow process-info* (target same-sandbox))", "a build waits for and inspects its own children only"),
    ]
    if real["socket"] or sandbox.network:
        rules.append(("(allow system-socket)", "creating a socket: the stage's local sockets or its network"))
    if real["socket"]:
        rules.append((f"(allow network-outbound {_filters('literal', real['socket'])})",
                      "the stage's own local sockets (a private display), by path"))
    if sandbox.network:
        rules += [
            ("(allow network-outbound)", "the policy gives this stage the machine's network"),
            (f"(allow network-outbound (literal {sbpl_string(MDNS_SOCKET)}))", "name resolution (mDNSResponder)"),
            (f"(allow file-read* {_filters('literal', NETWORK_READ[:-1])} (subpath {sbpl_string(NETWORK_READ[-1])}))",
             "hosts, resolver settings, service names and the system's certificates"),
            (f"(allow mach-lookup {' '.join(f'(global-name {sbpl_string(n)})' for n in NETWORK_MACH)})",
             "name resolution and certificate trust evaluation for TLS"),
        ]
    # A protected folder that holds a given path (the output folder holding the stage's own) is closed by
    # (deny default) down to that path; the others are denied by name as well.
    hidden = [q for p in sealed(sandbox) for q in (clean_path(p, "protected"), _real(p))]
    if hidden:
        rules.append((f"(deny file-read* file-write* file-map-executable process-exec "
                      f"{_filters('subpath', hidden)})",
                      "the checkout, the key folders and the producer's output: last, so no allow reopens them"))
    lines = ["(version 1)", "(deny default)"]
    for rule, why in rules:
        if "(" not in rule[1:] and rule not in UNFILTERED:
            raise ConfinementError(f"the profile rule {rule} would have no path: it would allow everywhere")
        lines += [*(f"; {line}" for line in why.splitlines()), rule]
    return "\n".join(lines) + "\n"


__all__ = ["MACH_SERVICES", "SYSTEM_EXEC", "SYSTEM_READ", "UNFILTERED", "profile", "sbpl_string"]
