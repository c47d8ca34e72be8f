"""The worker's Linux sandbox, applied by the worker to itself before it reads its first frame.

Standard library only (the worker imports it). Four layers, in this order,
because each one removes what the next would need:

1. ``no-new-privs``: no set-uid gain through exec; Landlock and seccomp require it.
2. ``user-net-namespace``: a user namespace holding no capability over the host
   and an empty network namespace (no interface but a down loopback). Where the
   machine forbids unprivileged user namespaces it is reported, not applied.
3. Landlock (``landlock-fs``, ``landlock-net`` from ABI 4, ``landlock-scope``
   from ABI 6): read only the bundle's files, write only the worker's temporary
   folder, no TCP bind or connect, no abstract unix socket or signal outside the
   worker's own domain.
4. ``seccomp``: the allow-list filter of ``_seccomp_bpf`` (every call it does
   not list answers ``EPERM``: exec, fork, sockets, ptrace, namespaces...),
   last because it forbids ``unshare``, ``landlock_*`` and ``seccomp``.

Each layer reports whether it was applied and, where not, why (errno or ABI).
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Sequence

from skillhost.os_sandbox._interface import Layer, layer
from skillhost.os_sandbox._seccomp_bpf import ALLOWED, ARCHES, build_program, install

__all__ = ["LINUX_LAYERS", "apply"]

LINUX_LAYERS = ("no-new-privs", "user-net-namespace", "landlock-fs", "landlock-net", "landlock-scope", "seccomp")

_PR_SET_NO_NEW_PRIVS, _PR_GET_NO_NEW_PRIVS, _PR_GET_SECCOMP = 38, 39, 21
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
# Landlock system calls share one number on every architecture.
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_CREATE_VERSION, _LL_RULE_PATH_BENEATH = 1, 1
# LANDLOCK_ACCESS_FS_* bits: 0..12 since ABI 1, REFER (13) ABI 2, TRUNCATE (14) ABI 3, IOCTL_DEV (15) ABI 5.
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_ABI1 = (1 << 13) - 1
_FS_BY_ABI = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP | CONNECT_TCP
_SCOPE_ALL = (1 << 0) | (1 << 1)  # ABSTRACT_UNIX_SOCKET | SIGNAL
_O_PATH = getattr(os, "O_PATH", 0o10000000)


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    # The running program's own symbols include libc: no library search, no ldconfig child.
    return ctypes.CDLL(None, use_errno=True)


def _errno_name() -> str:
    err = ctypes.get_errno()
    return errno.errorcode.get(err, str(err)) if err else "unknown error"


def _no_new_privs(libc: ctypes.CDLL) -> Layer:
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return layer("no-new-privs", applied=False, detail=f"prctl refused: {_errno_name()}")
    held = libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1
    return layer("no-new-privs", applied=held, detail="set" if held else "set but not read back")


def _namespaces(libc: ctypes.CDLL) -> Layer:
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        return layer("user-net-namespace", applied=False, detail=f"unshare not permitted here: {_errno_name()}")
    return layer("user-net-namespace", applied=True, detail="new user namespace, empty network namespace")


def _fs_access(abi: int) -> int:
    return _FS_ABI1 | sum(bit for since, bit in _FS_BY_ABI.items() if abi >= since)


def _add_path(libc: ctypes.CDLL, ruleset: int, path: str, allowed: int) -> bool:
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except OSError:
        return False  # a path that does not exist grants nothing
    try:
        rule = _PathBeneath(allowed, fd)
        return int(libc.syscall(_LL_ADD_RULE, ruleset, _LL_RULE_PATH_BENEATH, ctypes.byref(rule), 0)) == 0
    finally:
        os.close(fd)


def _landlock(libc: ctypes.CDLL, read_roots: Sequence[str], write_root: str) -> list[Layer]:
    names = ("landlock-fs", "landlock-net", "landlock-scope")
    abi = int(libc.syscall(_LL_CREATE, None, 0, _LL_CREATE_VERSION))
    if abi < 1:
        why = f"Landlock unavailable: {_errno_name()}"
        return [layer(n, applied=False, detail=why) for n in names]
    fs = _fs_access(abi)
    attr = _RulesetAttr(fs, _NET_TCP if abi >= 4 else 0, _SCOPE_ALL if abi >= 6 else 0)
    # The kernel reads only as many fields as the size says: an older ABI gets the older struct.
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = int(libc.syscall(_LL_CREATE, ctypes.byref(attr), size, 0))
    if ruleset < 0:
        why = f"landlock_create_ruleset refused: {_errno_name()}"
        return [layer(n, applied=False, detail=why) for n in names]
    try:
        read = _FS_READ_FILE | _FS_READ_DIR
        granted = [p for p in read_roots if _add_path(libc, ruleset, p, read)]
        # Everything in the temporary folder except executing what was written there.
        wrote = _add_path(libc, ruleset, write_root, fs & ~_FS_EXECUTE)
        if not granted or not wrote or libc.syscall(_LL_RESTRICT, ruleset, 0) != 0:
            why = f"landlock rules not enforced: {_errno_name()}"
            return [layer(n, applied=False, detail=why) for n in names]
    finally:
        os.close(ruleset)
    return [
        layer("landlock-fs", applied=True, detail=f"ABI {abi}: read {len(granted)} bundle root(s), write tmp"),
        layer("landlock-net", applied=abi >= 4, detail=f"ABI {abi}" + ("" if abi >= 4 else ": needs ABI 4")),
        layer("landlock-scope", applied=abi >= 6, detail=f"ABI {abi}" + ("" if abi >= 6 else ": needs ABI 6")),
    ]


def _seccomp(libc: ctypes.CDLL, *, no_new_privs: bool) -> Layer:
    machine = os.uname().machine
    if machine not in ARCHES:
        return layer("seccomp", applied=False, detail=f"no syscall table for {machine}")
    if not no_new_privs:
        return layer("seccomp", applied=False, detail="needs no-new-privs")
    err = install(libc, build_program(machine))
    if err:
        return layer("seccomp", applied=False, detail=f"filter refused: {errno.errorcode.get(err, str(err))}")
    mode = int(libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0))
    # 2 = SECCOMP_MODE_FILTER; read back through the one prctl option the filter allows.
    return layer("seccomp", applied=mode == 2, detail=f"filter mode {mode}: allow-list of {len(ALLOWED)} calls")


def apply(read_roots: Sequence[str], write_root: str) -> list[Layer]:
    """Apply every layer to this (single-threaded) process; irreversible. One report per layer."""
    try:
        libc = _libc()
    except OSError as exc:
        return [layer(n, applied=False, detail=f"libc not loadable: {exc.__class__.__name__}") for n in LINUX_LAYERS]
    nnp = _no_new_privs(libc)
    return [nnp, _namespaces(libc), *_landlock(libc, read_roots, write_root),
            _seccomp(libc, no_new_privs=nnp["applied"])]  # fmt: skip
