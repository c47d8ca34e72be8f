"""The policy's ``[app]`` section: how to build, install, probe and walk one app (docs/app-contract.md).

Everything the app brings is named here as data: argv lists (no shell) with a
closed set of placeholders, per-platform output globs and installer kinds, the
probe checks that must pass and the refusal-code pattern. None of it can loosen
what the verifier checks; it only says what this app's evidence must show.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import PurePosixPath
from typing import Annotated, Generic, TypeVar

from desktop_qualify.evidence_schemas import (
    INSTALLER_PLATFORMS,
    PLATFORMS,
    DisplayKind,
    InstallerKind,
    Platform,
    Record,
)
from pydantic import AfterValidator, Field, model_validator

# Placeholders each command may use; anything else in braces is refused, so a typo cannot pass as text.
BUILD_PLACEHOLDERS = frozenset({"python", "out", "source"})
RUN_PLACEHOLDERS = frozenset({"python", "source", "executable", "record"})
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
DEFAULT_CODE_PATTERN = r"^[A-Z][A-Z0-9_]{2,64}$"
# Environment names a build may be given on top of the allow-list must never carry a credential.
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")
_RESERVED_PREFIXES = ("ACTIONS_", "GITHUB_", "QUALIFY_", "SIGSTORE_", "RUNNER_")


def _placeholders(item: str) -> list[str]:
    names = _PLACEHOLDER.findall(item)
    if _PLACEHOLDER.sub("", item).count("{") or _PLACEHOLDER.sub("", item).count("}"):
        raise ValueError(f"argv item {item[:80]!r} has a brace that is not a placeholder")
    return names


def _argv_checker(allowed: frozenset[str]) -> AfterValidator:
    def check(argv: list[str]) -> list[str]:
        for item in argv:
            unknown = sorted(set(_placeholders(item)) - allowed)
            if unknown:
                raise ValueError(f"unknown placeholder(s) {', '.join(unknown)} in {item[:80]!r}; this command "
                                 f"may use {', '.join('{' + p + '}' for p in sorted(allowed))}")
        return argv
    return AfterValidator(check)


def _syntax_checker() -> AfterValidator:
    # The names a run command may use depend on the app's [app.toolchains]: AppPolicy checks them.
    def check(argv: list[str]) -> list[str]:
        for item in argv:
            _placeholders(item)
        return argv
    return AfterValidator(check)


_ArgvItem = Annotated[str, Field(min_length=1, max_length=1024)]
BuildArgv = Annotated[list[_ArgvItem], Field(min_length=1, max_length=64), _argv_checker(BUILD_PLACEHOLDERS)]
RunArgv = Annotated[list[_ArgvItem], Field(min_length=1, max_length=64), _syntax_checker()]
# The placeholders a toolchain may not take: they already stand for the job's own paths.
RESERVED_TOOLCHAIN_NAMES = frozenset({"out", "source", "executable", "record"})
_BARE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


def _toolchain_spec(value: str) -> str:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"toolchain {value[:80]!r} holds a control character")
    if _BARE_NAME.fullmatch(value):
        return value
    parts = value.replace("\\", "/").split("/")
    if not (value.startswith("/") or _WINDOWS_ABSOLUTE.match(value)) or ".." in parts:
        raise ValueError(f"toolchain {value[:80]!r} must be an executable name (looked up on the producer's PATH) "
                         "or an absolute path without '..'; a relative path would depend on the folder it runs in")
    return value


_ToolchainName = Annotated[str, Field(pattern=r"^[a-z]{1,32}$")]
_ToolchainSpec = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_toolchain_spec)]


def _relative_posix(value: str) -> str:
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value or "\x00" in value or value != path.as_posix():
        raise ValueError(f"{value[:80]!r} must be a plain relative POSIX path without '..'")
    return value


_RelativePath = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_relative_posix)]
_Glob = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^/\\\x00]+$")]


def _no_secret_name(name: str) -> str:
    upper = name.upper()
    if any(word in upper for word in _SECRET_WORDS) or upper.startswith(_RESERVED_PREFIXES):
        raise ValueError(f"{name!r} looks like a secret, a token or the pipeline's own variable; a build is code "
                         "of the artifact under qualification and never gets one")
    return name


_EnvName = Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,63}$"), AfterValidator(_no_secret_name)]
_ToolName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
_CheckName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]

T = TypeVar("T")


class PerPlatform(Record, Generic[T]):
    """One value per platform; a platform the policy requires must have one (checked when loading)."""

    linux: T | None = None
    """The value for Linux; absent: none."""
    macos: T | None = None
    """The value for macOS; absent: none."""
    windows: T | None = None
    """The value for Windows; absent: none."""

    def get(self, platform: Platform) -> T | None:
        """This platform's value, or None where the policy names none."""
        return {"linux": self.linux, "macos": self.macos, "windows": self.windows}[platform]


class BuildPolicy(Record):
    argv: BuildArgv
    """The build command: argv, no shell, run in a fresh export of ``source`` at the gated commit; placeholders
    ``{python}``, ``{out}``, ``{source}``."""
    env: list[_EnvName] = Field(default_factory=list, max_length=32)
    """Environment names the build gets on top of the allow-list; names that look like a secret, a token or the
    pipeline's own variables are refused."""
    tools: dict[_ToolName, BuildArgv] = Field(default_factory=dict, max_length=8)
    """Tool name -> the argv that prints its version (first line of stdout, recorded in the build record)."""
    outputs: PerPlatform[_Glob]
    """Per platform: one glob under ``{out}`` that must match exactly one file, the artifact."""


class InstallTarget(Record):
    """How one platform installs the artifact: the installer kind, and the executable inside the prefix."""

    kind: InstallerKind
    """The installer kind (docs/app-contract.md §5); it must install on this platform."""
    executable: _RelativePath
    """The executable's path inside the installed prefix (``Notepad.app/Contents/MacOS/Notepad`` is fine): relative,
    POSIX, no ``..``."""


class InstallPolicy(PerPlatform[InstallTarget]):
    @model_validator(mode="after")
    def _kinds_fit_their_platforms(self) -> InstallPolicy:
        for platform in PLATFORMS:
            target = self.get(platform)
            if target is not None and platform not in INSTALLER_PLATFORMS[target.kind]:
                raise ValueError(f"installer kind {target.kind!r} does not install on {platform}")
        return self


class ProbePolicy(Record):
    argv: RunArgv
    """The launch probe: the installed executable's subcommand (``{executable}`` first) or a runner from the
    exported source; it writes a ``qualify-probe`` record to ``{record}``."""
    require: list[_CheckName] = Field(default_factory=list, max_length=32)
    """The named checks the probe must report, each passed; the app may report more, never fewer."""

    @model_validator(mode="after")
    def _each_check_once(self) -> ProbePolicy:
        if len(set(self.require)) != len(self.require):
            raise ValueError("[app.probe] require names a check twice")
        return self


class JourneyCommand(Record):
    argv: RunArgv
    """The journey: the app's own subcommand (argv[0] = ``{executable}``) or a runner from the exported source; it
    writes a ``qualify-journey`` record to ``{record}``."""

    @property
    def is_runner(self) -> bool:
        return self.argv[0] != "{executable}"


class StatePolicy(Record):
    """The optional state verbs (docs/app-contract.md): write a known user state, and check it.

    Each runs like the probe (the installed executable's subcommand, or a runner from the exported
    source), against the update journey's user home, and writes a ``qualify-state`` record to {record}.
    """

    write: RunArgv
    """The verb that writes a known user state (argv, like the probe's)."""
    check: RunArgv
    """The verb that checks the state and reports its digest, or refuses it (argv, like the probe's)."""


class DisplayPolicy(PerPlatform[DisplayKind]):
    @model_validator(mode="after")
    def _xvfb_is_linux_only(self) -> DisplayPolicy:
        desktops: tuple[Platform, ...] = ("macos", "windows")
        for platform in desktops:
            if self.get(platform) == "xvfb":
                raise ValueError(f"{platform} runners have a desktop; Xvfb is for Linux")
        return self

    def kind(self, platform: Platform) -> DisplayKind:
        return self.get(platform) or "none"


def _anchored_regex(value: str) -> str:
    if not (value.startswith("^") and value.endswith("$")):
        raise ValueError("the refusal-code pattern must be anchored: ^...$")
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"the refusal-code pattern does not compile: {exc}") from None
    return value


class CodesPolicy(Record):
    pattern: Annotated[str, Field(min_length=2, max_length=200), AfterValidator(_anchored_regex)] = \
        DEFAULT_CODE_PATTERN
    """The anchored regular expression (``^...$``) every refusal code the policy names must match."""

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class AppPolicy(Record):
    """The policy's ``[app]`` section: the app's name and folder, and how it is built, installed, probed and run."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
    """A label: it names the artifact file (with the commit, platform and architecture), nothing else."""
    source: Annotated[str, Field(min_length=1, max_length=512)]
    """The app's folder in the committed tree, relative to the policy file."""
    build: BuildPolicy
    """How the app is built."""
    install: InstallPolicy
    """How each platform installs the artifact."""
    probe: ProbePolicy
    """The launch probe and the checks it must pass."""
    journey: JourneyCommand
    """The command that walks the journey."""
    display: DisplayPolicy = Field(default_factory=DisplayPolicy)
    """The display each platform's probe and journey run under: ``none`` (the default), ``xvfb`` (Linux only) or
    ``offscreen``."""
    state: StatePolicy | None = None
    """The state verbs; only an app with them can be put through the update journey (``[update]``)."""
    codes: CodesPolicy = Field(default_factory=CodesPolicy)
    """The refusal-code pattern the policy's codes must match."""
    toolchains: dict[_ToolchainName, _ToolchainSpec] = Field(default_factory=dict, max_length=8)
    """Tools the probe, journey and state commands name by placeholder: name (``node`` for ``{node}``) -> an
    executable name looked up on the producer's ``PATH``, or an absolute path. Each is resolved once on the
    producer's machine, refused (``QE_TOOLCHAIN_UNAVAILABLE``) when missing or not a regular executable file,
    and recorded with its path, SHA-256 and version; its folder is bound read-only into those stages. ``python``
    replaces the producer's own interpreter there (the build's ``{python}`` stays the producer's)."""

    @model_validator(mode="after")
    def _run_placeholders_are_known(self) -> AppPolicy:
        reserved = sorted(RESERVED_TOOLCHAIN_NAMES & set(self.toolchains))
        if reserved:
            raise ValueError(f"[app.toolchains] cannot name {', '.join(reserved)}: those placeholders are the job's "
                             "own paths")
        allowed = RUN_PLACEHOLDERS | set(self.toolchains)
        commands = [("[app.probe] argv", self.probe.argv), ("[app.journey] argv", self.journey.argv)]
        if self.state is not None:
            commands += [("[app.state] write", self.state.write), ("[app.state] check", self.state.check)]
        for where, argv in commands:
            for item in argv:
                unknown = sorted(set(_placeholders(item)) - allowed)
                if unknown:
                    raise ValueError(f"unknown placeholder(s) {', '.join(unknown)} in {where} item {item[:80]!r}; "
                                     f"it may use {', '.join('{' + p + '}' for p in sorted(allowed))} "
                                     "(a tool of its own: name it in [app.toolchains])")
        return self

    def run_commands(self) -> list[list[str]]:
        """The probe's, the journey's and the state verbs' command lines: where toolchains are substituted."""
        commands = [list(self.probe.argv), list(self.journey.argv)]
        if self.state is not None:
            commands += [list(self.state.write), list(self.state.check)]
        return commands

    def missing_for(self, platform: Platform) -> list[str]:
        """The per-platform entries a required platform lacks (empty when the app can be qualified there)."""
        missing = []
        if self.build.outputs.get(platform) is None:
            missing.append(f"[app.build.outputs] {platform}")
        if self.install.get(platform) is None:
            missing.append(f"[app.install] {platform}")
        return missing


__all__ = ["AppPolicy", "BuildPolicy", "CodesPolicy", "DisplayPolicy", "InstallTarget", "JourneyCommand",
           "ProbePolicy", "StatePolicy"]
