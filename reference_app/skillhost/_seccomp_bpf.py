"""The worker's seccomp filter: a small classic-BPF program, built here and audited by its tests.

Standard library only (the worker imports it). Why our own program rather than
libseccomp: the frozen bundle must carry whatever the worker loads, and a
``ctypes`` binding to ``libseccomp.so`` is a shared library PyInstaller cannot
see. The program is short enough to read in full (``describe`` prints it):

1. a foreign architecture (or the x32 ABI on x86_64) is killed, so a syscall
   number cannot be re-interpreted under another table;
2. ``clone`` with any namespace flag, and ``clone3`` (its flags sit behind a
   pointer a filter cannot read), answer ``EPERM`` / ``ENOSYS`` (glibc falls back
   to ``clone`` on ``ENOSYS``);
3. every call in ``DENIED`` answers ``EPERM``: program execution, debugging,
   mounts and namespaces, kernel modules and keyrings, BPF and perf, sockets of
   every family (the worker speaks only over its inherited pipes), io_uring
   (its operations would bypass this filter), and clock/host administration;
4. everything else is allowed: the interpreter's ordinary file, memory and
   pipe calls, which Landlock and the rlimits bound.
"""

from __future__ import annotations

import ctypes
import struct

__all__ = ["DENIED", "build_program", "install"]

# <linux/filter.h> classic BPF opcodes.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
# <linux/seccomp.h> actions and struct seccomp_data offsets.
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LO = 0, 4, 16
_EPERM, _ENOSYS = 1, 38
# Every CLONE_NEW* flag: a worker never creates a namespace of its own once filtered.
_CLONE_NS_FLAGS = 0x7E020080  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME(0x80)
_X32_BIT = 0x40000000

# The calls the worker never needs once started, by name (one table for every architecture).
DENIED = (
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsmount", "fspick",
    "mount_setattr", "unshare", "setns", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key",
    "request_key", "personality", "socket", "socketpair", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "open_by_handle_at", "name_to_handle_at", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
    "syslog", "sethostname", "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "vhangup", "lookup_dcookie", "seccomp",
)  # fmt: skip

# Syscall numbers from <asm/unistd_64.h> (x86_64) and <asm-generic/unistd.h> (aarch64).
_X86_64 = {
    "execve": 59, "execveat": 322, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "kcmp": 312, "pidfd_getfd": 438, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "unshare": 272, "setns": 308, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250,
    "add_key": 248, "request_key": 249, "personality": 135, "socket": 41, "socketpair": 53,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "init_module": 175,
    "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "reboot": 169, "swapon": 167, "swapoff": 168,
    "acct": 163, "quotactl": 179, "quotactl_fd": 443, "syslog": 103, "sethostname": 170,
    "setdomainname": 171, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "vhangup": 153, "lookup_dcookie": 212, "seccomp": 317, "clone": 56, "clone3": 435,
}  # fmt: skip
_AARCH64 = {
    "execve": 221, "execveat": 281, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "kcmp": 272, "pidfd_getfd": 438, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "unshare": 97, "setns": 268, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219,
    "add_key": 217, "request_key": 218, "personality": 92, "socket": 198, "socketpair": 199,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "init_module": 105,
    "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
    "open_by_handle_at": 265, "name_to_handle_at": 264, "reboot": 142, "swapon": 224, "swapoff": 225,
    "acct": 89, "quotactl": 60, "quotactl_fd": 443, "syslog": 116, "sethostname": 161,
    "setdomainname": 162, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
    "vhangup": 58, "lookup_dcookie": 18, "seccomp": 277, "clone": 220, "clone3": 435,
}  # fmt: skip
# AUDIT_ARCH_* (<linux/audit.h>) and each table, keyed by os.uname().machine.
ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

Insn = tuple[int, int, int, int]  # (code, jt, jf, k)


def build_program(machine: str) -> list[Insn]:
    """The filter for ``machine``; ``KeyError`` for an architecture this worker has no table for."""
    audit_arch, numbers = ARCHES[machine]
    denied = sorted({numbers[name] for name in DENIED})
    prog: list[Insn] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 1, 0, audit_arch),
        (_RET_K, 0, 0, RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if machine == "x86_64":
        # x32 calls carry bit 30 and reach the same kernel entry points under other numbers.
        prog += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, RET_KILL_PROCESS)]
    prog += [
        (_JEQ_K, 0, 1, numbers["clone3"]),
        (_RET_K, 0, 0, RET_ERRNO | _ENOSYS),
        (_JEQ_K, 0, 3, numbers["clone"]),
        (_LD_W_ABS, 0, 0, _OFF_ARG0_LO),
        (_JSET_K, 0, 1, _CLONE_NS_FLAGS),
        (_RET_K, 0, 0, RET_ERRNO | _EPERM),
        # After the clone branch the accumulator may hold arg0: reload the number.
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    for nr in denied:
        prog += [(_JEQ_K, 0, 1, nr), (_RET_K, 0, 0, RET_ERRNO | _EPERM)]
    prog.append((_RET_K, 0, 0, RET_ALLOW))
    return prog


def describe(prog: list[Insn]) -> list[str]:
    """One readable line per instruction, for review and for the tests."""
    names = {_LD_W_ABS: "ld", _JEQ_K: "jeq", _JGE_K: "jge", _JSET_K: "jset", _RET_K: "ret"}
    return [f"{i:3d} {names[c]:4s} jt={jt} jf={jf} k={k:#x}" for i, (c, jt, jf, k) in enumerate(prog)]


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install(libc: ctypes.CDLL, prog: list[Insn]) -> int:
    """Load ``prog`` with ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)``; 0 or the errno."""
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in prog)
    buf = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    pr_set_seccomp, seccomp_mode_filter = 22, 2
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0:
        return ctypes.get_errno() or -1
    return 0
