"""Linux: app code in bubblewrap's namespaces, seeing only what its stage binds in.

The sandbox is built from nothing, as bubblewrap (Flatpak's sandbox) builds it: an empty root, then

* the system's programs and libraries read-only (``/usr``, the merged-``/usr`` links, a short list of
  ``/etc`` files a process needs to start, resolve names and check certificates);
* the stage's toolchain read-only (the producer's Python prefixes, the PATH entries);
* what the stage reads read-only (the installed prefix, the build information);
* the stage's own folders writable (the exported source, its output, its HOME and TMPDIR);
* a fresh ``/proc`` of its own PID namespace, a minimal ``/dev``, an empty ``/tmp``.

New user, PID, mount, IPC and UTS namespaces always, and a network namespace (loopback only) unless the
policy gives the stage the network. No capabilities (``--cap-drop ALL``), a session of its own (no terminal
injection), and ``--die-with-parent``: the stage dies with the producer. When the stage's first process ends,
bubblewrap's init ends and the kernel kills every process left in the PID namespace: a helper the build
double-forked into a session of its own cannot outlive the stage.

Nothing else exists inside: the checkout, ``.qualify/`` and its private keys, the producer's output folder,
HOME and ``/proc`` are not there to read. When the producer runs as root, app code runs as an unprivileged
uid inside the user namespace (mapped to root outside, so the stage's files stay the producer's), which also
lets the app's own sandbox create nested user namespaces (mapping uid 0 needs CAP_SETFCAP).

What the sandbox had is read back from bubblewrap's ``--info-fd`` report (the namespaces it created, compared
with the producer's own), never taken from the command line alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ._stage import (
    ConfinedCommand,
    Confinement,
    ConfinementError,
    ConfinementFacts,
    StageSandbox,
    exposes,
    inside,
)

# The merged-/usr layout's top-level links (or, on an older layout, folders) a program needs.
_SYSTEM_TOP = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# /etc files every process may need: the dynamic linker's cache, users and groups (getpwuid), locale and time.
_ETC_ALWAYS = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime",
               "locale.alias", "alternatives", "fonts", "mime.types", "os-release", "magic")
# What a stage with the network also needs: name resolution, certificates, and the package tools' own settings
# (a registry mirror). Bound only where the policy gives the stage the network.
_ETC_NETWORK = ("resolv.conf", "hosts", "host.conf", "gai.conf", "services", "protocols", "ssl",
                "ca-certificates", "ca-certificates.conf", "pki", "pip.conf", "xdg", "npmrc", "gitconfig")
# The namespaces bubblewrap's info report names, and the layer each proves.
_NAMESPACES = {"mnt-namespace": ("mnt", "mount-namespace"), "pid-namespace": ("pid", "pid-namespace"),
               "ipc-namespace": ("ipc", "ipc-namespace"), "uts-namespace": ("uts", "uts-namespace"),
               "net-namespace": ("net", "network-namespace")}
# The uid app code runs as inside the user namespace when the producer is root.
SANDBOX_UID = 1000
_PROBE_TIMEOUT = 20


class BubblewrapConfinement(Confinement):
    """The Linux adapter: ``bwrap`` with the binds a ``StageSandbox`` names (module docstring)."""

    mechanism = "bubblewrap"

    def __init__(self, bwrap: str | None = None, *, platform: str = sys.platform, root: Path = Path("/"),
                 which: Callable[[str], str | None] = shutil.which) -> None:
        # ``bwrap``: the program to run; by default the one on the producer's PATH (``which``), if any.
        self._bwrap = bwrap if bwrap is not None else which("bwrap")
        self._platform = platform
        self._root = root
        self._why_not: str | bool | None = False  # False: not probed yet

    def unavailable(self) -> str | None:
        """Why bubblewrap cannot confine here, found once by starting it: None when it can."""
        if self._why_not is False:
            self._why_not = self._probe()
        return self._why_not if isinstance(self._why_not, str) else None

    def _probe(self) -> str | None:
        if not self._platform.startswith("linux"):
            return "bubblewrap confines app code on Linux only"
        if self._bwrap is None:
            return "bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
        argv = [self._bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent",
                "--ro-bind", "/", "/", "--proc", "/proc", "true"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bubblewrap ({self._bwrap}) cannot be started: {exc}"
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", errors="replace").strip()[:300]
            return (f"bubblewrap cannot create the namespaces ({said or f'exit {done.returncode}'}); where "
                    "unprivileged user namespaces are restricted (Ubuntu 24.04's AppArmor), allow them: "
                    "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
        return None

    def wrap(self, argv: Sequence[str], sandbox: StageSandbox, env: Mapping[str, str]) -> ConfinedCommand:
        """``bwrap`` with the stage's binds around ``argv``; the info pipe read back by ``finish``."""
        why = self.unavailable()
        if why is not None or self._bwrap is None:
            raise ConfinementError(why or "bubblewrap is not installed")
        binds = bind_arguments(sandbox, root=self._root)
        read_fd, write_fd = os.pipe()
        args = [self._bwrap, *namespace_arguments(sandbox.network, uid=os.getuid()), *binds,
                "--info-fd", str(write_fd), "--chdir", str(sandbox.cwd or sandbox.home), "--", *argv]
        closed = [False]

        def close() -> None:
            if not closed[0]:
                closed[0] = True
                for fd in (read_fd, write_fd):
                    with contextlib.suppress(OSError):
                        os.close(fd)

        def finish() -> ConfinementFacts:
            # Our copy of the write end closes first, so the read sees end of file once bubblewrap is gone.
            with contextlib.suppress(OSError):
                os.close(write_fd)
            try:
                report = _read_all(read_fd)
            finally:
                close()
            return facts_from_info(sandbox, report, own_namespaces())

        return ConfinedCommand(argv=args, env=dict(env), pass_fds=(write_fd,), finish=finish, release=close)


def namespace_arguments(network: bool, *, uid: int) -> list[str]:
    """The namespaces and process settings of every stage; the network namespace unless it keeps the network."""
    args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    if uid == 0:
        args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    return [*args, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def _checked(path: Path, sandbox: StageSandbox, what: str) -> Path:
    if not path.is_absolute():
        raise ConfinementError(f"the {what} path {path} is not absolute")
    shown = exposes(path, sandbox.protected)
    if shown is not None:
        raise ConfinementError(f"binding the {what} path {path} would show {shown} to app code")
    return path


def _system_binds(root: Path, network: bool) -> list[str]:
    args = ["--ro-bind", str(root / "usr"), "/usr"]
    for name in _SYSTEM_TOP:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for name in (*_ETC_ALWAYS, *(_ETC_NETWORK if network else ())):
        if (root / "etc" / name).exists():
            args += ["--ro-bind-try", str(root / "etc" / name), f"/etc/{name}"]
    return args


def bind_arguments(sandbox: StageSandbox, *, root: Path = Path("/")) -> list[str]:
    """Everything the stage sees, parents before children (a later bind over a folder hides what was there)."""
    if not any(inside(sandbox.home, w) for w in sandbox.writable) or \
            not any(inside(sandbox.tmp, w) for w in sandbox.writable):
        raise ConfinementError("the stage's HOME and TMPDIR must lie in its writable folders")
    binds: list[tuple[Path, str]] = []
    for what, flag, paths in (("toolchain", "--ro-bind", sandbox.toolchain), ("read-only", "--ro-bind",
                                                                               sandbox.readable),
                              ("writable", "--bind", sandbox.writable), ("socket", "--bind", sandbox.sockets)):
        binds += [(_checked(p, sandbox, what), flag) for p in paths]
    # Stable and parent-first: a folder bound after a path inside it would hide that path.
    binds.sort(key=lambda item: (len(item[0].parts), str(item[0])))
    args = _system_binds(root, sandbox.network)
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108 - an empty tmpfs of its own
    for path, flag in binds:
        args += [flag, str(path), str(path)]
    return args


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
        if sum(map(len, chunks)) > 64 * 1024:
            break
    return b"".join(chunks)


def own_namespaces(proc: Path = Path("/proc/self/ns")) -> dict[str, int]:
    """The producer's own namespace ids (``mnt``, ``pid``...), to tell the sandbox's apart from them."""
    found = {}
    for name in ("mnt", "pid", "ipc", "uts", "net", "user", "cgroup"):
        with contextlib.suppress(OSError, ValueError):
            found[name] = int(str((proc / name).readlink()).split("[", 1)[1].rstrip("]"))
    return found


def facts_from_info(sandbox: StageSandbox, report: bytes, mine: Mapping[str, int]) -> ConfinementFacts:
    """The layers bubblewrap's info report proves, each namespace compared with the producer's own.

    No report means bubblewrap never set the sandbox up (it writes the report once every namespace exists):
    the stage then had nothing, and says so. The user namespace, the dropped capabilities and the death with
    the stage follow from the report's existence (bubblewrap stops before writing it when it cannot give
    any of them) and, for the last, from the PID namespace it proves.
    """
    try:
        info = json.loads(report.decode("utf-8")) if report.strip() else None
    except (UnicodeDecodeError, ValueError):
        info = None
    if not isinstance(info, dict) or not isinstance(info.get("child-pid"), int):
        return ConfinementFacts(sandbox.stage, "bubblewrap", (), sandbox.network,
                                "bubblewrap wrote no sandbox report: the command did not run confined")
    layers = ["user-namespace", "no-capabilities"]
    for key, (own, layer) in _NAMESPACES.items():
        value = info.get(key)
        if isinstance(value, int) and value != mine.get(own):
            layers.append(layer)
    network = "network-namespace" not in layers
    if "pid-namespace" in layers:
        layers.append("dies-with-stage")
    layers += ["private-home", "private-tmp"]
    detail = (f"bound read-only: {len(sandbox.toolchain)} toolchain and {len(sandbox.readable)} input path(s); "
              f"writable: {', '.join(p.name for p in sandbox.writable)[:300]}; "
              f"network: {'the machine' if network else 'loopback only'}")
    return ConfinementFacts(sandbox.stage, "bubblewrap", tuple(layers), network, detail)


__all__ = ["SANDBOX_UID", "BubblewrapConfinement", "bind_arguments", "facts_from_info", "namespace_arguments",
           "own_namespaces"]
