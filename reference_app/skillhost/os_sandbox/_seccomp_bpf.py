"""The worker's seccomp filter: an allow-list in a small classic-BPF program, built here and audited by its tests.

Standard library only (the worker imports it). Why our own program rather than
libseccomp: the frozen bundle must carry whatever the worker loads, and a
``ctypes`` binding to ``libseccomp.so`` is a shared library PyInstaller cannot
see. The program is short enough to read in full (``describe`` prints it):

1. a foreign architecture (or the x32 ABI on x86_64) is killed, so a syscall
   number cannot be re-interpreted under another table;
2. every call in ``ALLOWED`` is allowed; the two in ``ARG_RULES`` only with the
   one argument value the worker uses;
3. everything else answers ``EPERM``: program execution, ``fork``/``clone``,
   sockets, ``ptrace``, namespaces, ``personality``, keyrings, ``memfd_create``,
   ``userfaultfd``, BPF, io_uring and every call added to the kernel later.

``ALLOWED`` was measured, not guessed: ``strace -f`` over the frozen app's
journey, the same journey from source, and the reference app's worker tests,
keeping the calls each worker made after its filter was installed
(``tools/trace_worker_syscalls.py`` repeats the measurement). The few entries
the trace did not show are marked as such, each with the path that needs it.
"""

from __future__ import annotations

import ctypes
import struct

__all__ = ["ALLOWED", "ARCHES", "ARG_RULES", "build_program", "describe", "install"]

# <linux/filter.h> classic BPF opcodes.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
# <linux/seccomp.h> actions and struct seccomp_data offsets.
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_OFF_NR, _OFF_ARCH, _OFF_ARGS = 0, 4, 16
_EPERM = 1
_X32_BIT = 0x40000000

# Every call the worker makes once filtered, with why (one table for every architecture).
ALLOWED: dict[str, str] = {
    "read": "reads its frames from stdin, module files and the bundle's archive",
    "write": "writes its frames to stdout",
    "close": "closes the files it opened",
    "openat": "opens module and data files (Landlock decides which paths)",
    "newfstatat": "stat and fstat of module files and directories (glibc's fstat is fstatat)",
    "lseek": "seeks inside the bundle's module archive",
    "getdents64": "the import system lists a source folder the first time it imports from it",
    "getcwd": "the import system resolves the empty sys.path entry",
    "mmap": "memory and lazily loaded extension modules",
    "mprotect": "the dynamic loader's relocation of a lazily loaded extension module",
    "munmap": "frees memory and unloads mapped files",
    "mremap": "not in the trace: realloc of a large block grows its mapping in place",
    "madvise": "not in the trace: glibc's free returns large freed pages",
    "brk": "the malloc heap grows and shrinks",
    "rt_sigaction": "the interpreter restores its signal handlers at exit",
    "rt_sigprocmask": "not in the trace: glibc blocks signals around its own critical sections",
    "rt_sigreturn": "not in the trace: the return from any signal handler (otherwise a handled signal kills)",
    "getpid": "the result frame carries the worker's pid",
    "getppid": "the hostile self-test names its host (then ptrace, which is refused)",
    "ioctl": "open() asks whether a file is a terminal (TCGETS only, see ARG_RULES)",
    "prctl": "the worker reads its own seccomp mode back (PR_GET_SECCOMP only, see ARG_RULES)",
    "exit_group": "the worker's exit",
    # Not in the trace before the journey's own-folder step: a handler's scratch file in the worker's folder is
    # renamed and removed (Landlock decides where: beneath that folder only).
    "rename": "renames a file in its own folder (aarch64: renameat, which glibc's rename() calls there)",
    "unlink": "removes a file from its own folder (aarch64: unlinkat, which glibc's unlink() calls there)",
}

# Calls allowed only with one argument (index, allowed values): the kernel reads both as 32-bit ints
# (ioctl's ``unsigned int cmd``, prctl's ``int option``), so the low half of the argument is the whole of it.
_TCGETS, _PR_GET_SECCOMP = 0x5401, 21
ARG_RULES: dict[str, tuple[int, tuple[int, ...]]] = {"ioctl": (1, (_TCGETS,)), "prctl": (0, (_PR_GET_SECCOMP,))}

# Syscall numbers from <asm/unistd_64.h> (x86_64) and <asm-generic/unistd.h> (aarch64).
_X86_64 = {
    "read": 0, "write": 1, "close": 3, "openat": 257, "newfstatat": 262, "lseek": 8, "getdents64": 217,
    "getcwd": 79, "mmap": 9, "mprotect": 10, "munmap": 11, "mremap": 25, "madvise": 28, "brk": 12,
    "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15, "getpid": 39, "getppid": 110, "ioctl": 16,
    "prctl": 157, "exit_group": 231, "rename": 82, "unlink": 87,
}  # fmt: skip
_AARCH64 = {
    "read": 63, "write": 64, "close": 57, "openat": 56, "newfstatat": 79, "lseek": 62, "getdents64": 61,
    "getcwd": 17, "mmap": 222, "mprotect": 226, "munmap": 215, "mremap": 216, "madvise": 233, "brk": 214,
    "rt_sigaction": 134, "rt_sigprocmask": 135, "rt_sigreturn": 139, "getpid": 172, "getppid": 173, "ioctl": 29,
    "prctl": 167, "exit_group": 94, "rename": 38, "unlink": 35,  # renameat and unlinkat: no rename or unlink here
}  # fmt: skip
# AUDIT_ARCH_* (<linux/audit.h>) and each table, keyed by os.uname().machine.
ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

Insn = tuple[int, int, int, int]  # (code, jt, jf, k)


def _arg_rule(index: int, values: tuple[int, ...]) -> list[Insn]:
    """Allow when argument ``index`` is one of ``values``, else EPERM; always ends in a return."""
    block: list[Insn] = [(_LD_W_ABS, 0, 0, _OFF_ARGS + 8 * index)]  # the low half (little-endian)
    for value in values:
        block += [(_JEQ_K, 0, 1, value), (_RET_K, 0, 0, RET_ALLOW)]
    return [*block, (_RET_K, 0, 0, RET_ERRNO | _EPERM)]


def build_program(machine: str) -> list[Insn]:
    """The filter for ``machine``; ``KeyError`` for an architecture this worker has no table for."""
    audit_arch, numbers = ARCHES[machine]
    prog: list[Insn] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 1, 0, audit_arch),
        (_RET_K, 0, 0, RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if machine == "x86_64":
        # x32 calls carry bit 30 and reach the same kernel entry points under other numbers.
        prog += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, RET_KILL_PROCESS)]
    # The table's order is the check's order: the busiest calls (read, write) are matched first.
    for name in ALLOWED:
        if name in ARG_RULES:
            block = _arg_rule(*ARG_RULES[name])
            # Not this call: skip the block, whose every path returns, with the number still loaded.
            prog += [(_JEQ_K, 0, len(block), numbers[name]), *block]
        else:
            prog += [(_JEQ_K, 0, 1, numbers[name]), (_RET_K, 0, 0, RET_ALLOW)]
    prog.append((_RET_K, 0, 0, RET_ERRNO | _EPERM))
    return prog


def describe(prog: list[Insn]) -> list[str]:
    """One readable line per instruction, for review and for the tests."""
    names = {_LD_W_ABS: "ld", _JEQ_K: "jeq", _JGE_K: "jge", _RET_K: "ret"}
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
