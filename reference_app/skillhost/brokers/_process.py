"""Process broker: fixed executables, literal argv allow-list, no shell.

A request is an argv list. It runs only if it equals, element for element, one
reviewed rule (``git status --porcelain``); there is no pattern matching, so
shell metacharacters are just bytes of an argv that is not on the list. The
executable is resolved to an absolute path once, when the broker is built; the
child gets ``shell=False``, a minimal environment, a cwd inside the allowed
root, no stdin, a timeout and capped output. The audit names the rule, never
argv or output (docs/design.md §9.4).
"""
# ruff: noqa: PTH120

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from skillhost._errors import SkillError
from skillhost.brokers._diagnostics import TEMPLATES, Diagnostics
from skillhost.brokers._fs import resolve_inside

DIAGNOSTIC_TOOLS = frozenset(tool for tools in TEMPLATES.values() for tool in tools)
MAX_ARGV = 16
MAX_ARG = 256
MAX_OUTPUT = 16 * 1024
MAX_STDERR = 2 * 1024
TIMEOUT = 5.0


@dataclass(frozen=True)
class ProcessRule:
    """One allowed command: a logical name and its literal argv (``argv[0]`` is the executable name).

    ``skills`` binds the rule to the skill ids that may use it and ``entry`` to one handler entry point
    (``None``: not bound). The authority's own list of rule names (``_authority``) narrows it further.
    """

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = field(default=())
    skills: frozenset[str] | None = None
    entry: str | None = None


# Command-scope config outranks the repository's own .git/config, so these switch off the settings
# through which a repository in the workspace could make git run a program of its choosing.
_GIT_OVERRIDES = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("safe.bareRepository", "explicit"),
    ("core.untrackedCache", "false"),
    # Status would otherwise run git inside each submodule, under that submodule's own config.
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
)


# Lists the filter drivers a repository configures (names only, NUL-separated).
_GIT_LIST_FILTERS = ("config", "--null", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$")
# An empty command disables a driver; ``required=false`` keeps git from failing on it.
_BLANK_FILTER = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
MAX_GIT_FILTERS = 32


def _git_env() -> tuple[tuple[str, str], ...]:
    env = [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_CONFIG_GLOBAL", os.devnull), ("GIT_TERMINAL_PROMPT", "0")]
    env.append(("GIT_CONFIG_COUNT", str(len(_GIT_OVERRIDES))))
    for i, (key, value) in enumerate(_GIT_OVERRIDES):
        env += [(f"GIT_CONFIG_KEY_{i}", key), (f"GIT_CONFIG_VALUE_{i}", value)]
    return tuple(env)


# The bundled skill the git rules are reviewed for; no other skill may run them.
GIT_SKILLS = frozenset({"repo-status"})


def entry_id(tier: str, skill_id: str, handler_sha256: str) -> str:
    """The entry point a run executes, as its tier's check verified it: tier, skill id and handler digest.

    A rule bound to an entry runs only for a caller whose verified entry is that one, so a handler that
    drifted from what was reviewed (or another tier's skill under the same id) cannot run it.
    """
    return f"{tier}:{skill_id}:{handler_sha256}"


def git_rules(entry: str | None = None) -> tuple[ProcessRule, ...]:
    """The git rules, bound to ``repo-status`` and, when given, to its entry as the catalog records it."""
    # Git must not read system/global config (hooks, aliases, credential helpers) or walk above the root.
    env = _git_env()
    return (
        ProcessRule("git-status", ("git", "status", "--porcelain"), env, GIT_SKILLS, entry),
        ProcessRule("git-version", ("git", "--version"), env, GIT_SKILLS, entry),
    )


class _Capped:
    """Read a stream to a byte cap; remember whether it went over."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        self.data = b""
        self.over = False
        self._thread = threading.Thread(target=self._run, args=(stream, cap), daemon=True)
        self._thread.start()

    def _run(self, stream: IO[bytes], cap: int) -> None:
        chunks, total = [], 0
        with contextlib.suppress(OSError, ValueError):
            while True:
                block = stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096)
                if not block:
                    break
                total += len(block)
                if total > cap:
                    self.over = True
                    break
                chunks.append(block)
        self.data = b"".join(chunks)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class ProcessPort:
    """``process.run(argv, cwd=".")`` for argv lists on the allow-list; ``cwd`` must be the root.

    ``process.diagnose(tool, host, port=443)`` runs a fixed network diagnostic (``_diagnostics``) whose
    argv the broker builds from a destination the egress rules accepted.
    """

    methods = ("run", "diagnose")

    def __init__(
        self,
        root: str | os.PathLike[str],
        rules: tuple[ProcessRule, ...] | None = None,
        timeout: float = TIMEOUT,
        max_output: int = MAX_OUTPUT,
        withheld: tuple[ProcessRule, ...] = (),
        *,
        skill_id: str = "",
        entry: str = "",
        diagnostics: Diagnostics | None = None,
        diagnostics_withheld: bool = False,
    ) -> None:
        self._root = os.path.realpath(os.fspath(root))
        self._rules = {r.argv: r for r in (git_rules() if rules is None else rules)}
        # Rules the host's policy has but the current authority does not grant: refused with a code of their own.
        self._withheld = {r.argv: r for r in withheld}
        # The caller's skill id and the entry its tier's check verified (``entry_id``): what rules are bound to.
        self._skill, self._entry = skill_id, entry
        self._diagnostics, self._diagnostics_withheld = diagnostics, diagnostics_withheld
        # Resolve each executable once, now, to an absolute path: later PATH changes cannot redirect it.
        self._exe = {name: shutil.which(name) for name in {r.argv[0] for r in self._rules.values()}}
        self._timeout, self._max = timeout, max_output

    def _rule(self, argv: object) -> ProcessRule:
        if (
            not isinstance(argv, list)
            or not 1 <= len(argv) <= MAX_ARGV
            or not all(isinstance(a, str) and len(a) <= MAX_ARG and a.isascii() for a in argv)
        ):
            raise SkillError("CC_SKILL_PORT_BAD_ARGS", "argv must be a list of ASCII strings (no shell string)")
        rule = self._rules.get(tuple(argv))
        if rule is None:
            if tuple(argv) in self._withheld:
                raise SkillError("CC_SKILL_AUTHORITY_DENIED", "the current authority does not grant this rule")
            raise SkillError("CC_SKILL_PROCESS_DENIED", "argv is not on the literal allow-list")
        if rule.skills is not None and self._skill not in rule.skills:
            raise SkillError("CC_SKILL_PROCESS_DENIED", f"{rule.name} is bound to other skills")
        if rule.entry is not None and self._entry != rule.entry:
            raise SkillError("CC_SKILL_PROCESS_DENIED", f"{rule.name} is bound to another entry point")
        return rule

    def _env(self, rule: ProcessRule, exe: str) -> dict[str, str]:
        env = {"PATH": os.path.dirname(exe), "LC_ALL": "C", "LANG": "C", "HOME": self._root}
        env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(self._root)
        if os.name == "nt":
            for key in ("SYSTEMROOT", "WINDIR"):
                if os.environ.get(key):
                    env[key] = os.environ[key]
        env.update(dict(rule.env))
        return env

    def _execute(self, argv: list[str], workdir: str, env: dict[str, str], started: float) -> tuple[int, bytes, bytes]:
        """Run one argv with capped output against the port's time budget (counted from ``started``)."""
        try:
            proc = subprocess.Popen(
                argv,
                shell=False,
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
            )
        except OSError:
            raise SkillError("CC_SKILL_PROCESS_UNAVAILABLE", "could not start the allow-listed executable") from None
        if proc.stdout is None or proc.stderr is None:  # PIPE was requested; this keeps the types honest
            raise SkillError("CC_SKILL_PROCESS_UNAVAILABLE", "no output pipes")
        out, err = _Capped(proc.stdout, self._max), _Capped(proc.stderr, MAX_STDERR)
        code = None
        try:
            while proc.poll() is None:
                if out.over or err.over:
                    code = ("CC_SKILL_PROCESS_OUTPUT_TOO_LARGE", "output exceeded the cap")
                    break
                if time.monotonic() - started > self._timeout:
                    code = ("CC_SKILL_PROCESS_TIMEOUT", f"exceeded {self._timeout:.1f}s")
                    break
                time.sleep(0.01)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            out.join(1.0)
            err.join(1.0)
            for stream in (proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
        if code is None and (out.over or err.over):
            code = ("CC_SKILL_PROCESS_OUTPUT_TOO_LARGE", "output exceeded the cap")
        if code is not None:
            raise SkillError(*code)
        return proc.returncode, out.data, err.data

    def _without_git_filters(self, exe: str, workdir: str, env: dict[str, str], started: float) -> dict[str, str]:
        """Blank every filter driver the repository configures: ``git status`` runs a driver's
        ``clean`` command when it re-hashes a file, and no static override can name them all.
        Listing config reads files only; it runs nothing."""
        rc, out, _ = self._execute([exe, *_GIT_LIST_FILTERS], workdir, env, started)
        names = [n for n in out.decode("utf-8", "replace").split("\0") if n] if rc == 0 else []
        drivers = sorted({n[len("filter.") :].rsplit(".", 1)[0] for n in names})
        if len(drivers) > MAX_GIT_FILTERS:
            raise SkillError("CC_SKILL_PROCESS_DENIED", "the repository configures too many filter drivers")
        overrides = [(f"filter.{d}.{k}", v) for d in drivers for k, v in _BLANK_FILTER]
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
        env = dict(env, GIT_CONFIG_COUNT=str(count + len(overrides)))
        for i, (key, value) in enumerate(overrides, start=count):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
        return env

    def run(self, argv: object = None, cwd: object = ".") -> dict[str, Any]:
        rule = self._rule(argv)
        workdir = resolve_inside(self._root, cwd)
        # Only the root itself: a sub-folder can hold a nested repository with its own config and hooks.
        if workdir != self._root:
            raise SkillError("CC_SKILL_PATH_ESCAPE", "cwd must be the allowed root '.'")
        exe = self._exe.get(rule.argv[0])
        if not exe:
            raise SkillError("CC_SKILL_PROCESS_UNAVAILABLE", f"{rule.name}: executable not installed")
        started = time.monotonic()
        env = self._env(rule, exe)
        if rule.argv[0] == "git":
            env = self._without_git_filters(exe, workdir, env, started)
        returncode, out, err = self._execute([exe, *rule.argv[1:]], workdir, env, started)
        return {
            "command": rule.name,
            "returncode": returncode,
            "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace")[:MAX_STDERR],
            "duration_ms": int((time.monotonic() - started) * 1000),
        }

    def diagnose(self, tool: object = "", host: object = "", port: object = 443) -> dict[str, Any]:
        if self._diagnostics is None:
            if self._diagnostics_withheld:
                raise SkillError("CC_SKILL_AUTHORITY_DENIED", "the current authority does not grant diagnostics")
            raise SkillError("CC_SKILL_PROCESS_DENIED", "this host offers no network diagnostics to this skill")
        diag = self._diagnostics.build(tool, host, port)
        started = time.monotonic()
        env = self._env(ProcessRule(diag.tool, diag.argv), diag.argv[0])
        returncode, out, err = self._execute(list(diag.argv), self._root, env, started)
        return {
            "command": diag.tool,
            "returncode": returncode,
            "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace")[:MAX_STDERR],
            "duration_ms": int((time.monotonic() - started) * 1000),
        }

    def audit_target(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        if method == "diagnose":
            tool = args[0] if args else kwargs.get("tool")
            name = tool if isinstance(tool, str) and tool in DIAGNOSTIC_TOOLS else "?"
            host = args[1] if len(args) > 1 else kwargs.get("host")
            port = args[2] if len(args) > 2 else kwargs.get("port", 443)
            # The destination as the egress broker names it: a decided run-time host carries its decision id.
            where = self._diagnostics.label(host, port) if self._diagnostics is not None else "?"
            ok = isinstance(host, str) and host.isascii() and host.isprintable()
            return f"diagnose:{name}:{where if ok else '?'}"[:64]
        argv = args[0] if args else kwargs.get("argv")
        key = tuple(argv) if isinstance(argv, list) and all(isinstance(a, str) for a in argv) else None
        rule = None if key is None else self._rules.get(key) or self._withheld.get(key)
        return rule.name if rule else "not-allow-listed"
