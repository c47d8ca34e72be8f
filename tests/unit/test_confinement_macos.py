"""The macOS adapter, held on Linux: its account commands, its profile text, its command line and its sweep.

Nothing here runs on a Mac: every external command goes through a recording runner that answers as macOS
would (``FakeMac``), and the profile is parsed as SBPL (balanced forms, known operations, the protected
paths denied after every allow). docs/boundaries.md says what only a real Mac can confirm.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import MACOS_LAYERS
from desktop_qualify.producer.confinement._macos import CHDIR_SCRIPT, SandboxExecConfinement
from desktop_qualify.producer.confinement._macos_account import create_commands
from desktop_qualify.producer.confinement._macos_profile import UNFILTERED, profile, sbpl_string
from desktop_qualify.producer.confinement._stage import ConfinementError, StageSandbox

SUDO, DSCL = "/usr/bin/sudo", "/usr/bin/dscl"
KNOWN_OPERATIONS = {"default", "process-fork", "process-exec", "file-read*", "file-read-metadata", "file-write*",
                    "file-write-data", "file-map-executable", "sysctl-read", "mach-lookup", "ipc-posix-sem",
                    "signal", "process-info*", "system-socket", "network-outbound"}
KNOWN_FILTERS = {"subpath", "literal", "regex", "global-name", "target"}


def sample(network: bool = False, sockets: tuple[Path, ...] = ()) -> StageSandbox:
    stage = Path("/Users/runner/stage")
    return StageSandbox(stage="build", home=stage / "home", tmp=stage / "tmp", writable=(stage,),
                        readable=(Path("/Users/runner/in"),), toolchain=(Path("/opt/py"),), sockets=sockets,
                        network=network, protected=(Path("/Users/runner/work/repo"), Path("/Users/runner/keys")))


EXPECTED = r"""(version 1)
(deny default)
; a build runs compilers, a journey starts the app: app code starts processes
(allow process-fork)
; programs of the system, the toolchain, the stage's inputs and what it built; nothing else
(allow process-exec (subpath "/bin") (subpath "/usr/bin") (subpath "/usr/sbin") (subpath "/usr/libexec") (subpath "/Library/Developer/CommandLineTools") (subpath "/opt/py") (subpath "/Users/runner/in") (subpath "/Users/runner/stage") (regex #"^/Applications/Xcode[^/]*\.app(/|$)"))
; /usr/lib: dyld, libSystem and the system's libraries: every process maps them
; /usr/share: time zones, locales, terminfo and the system's data files
; /System: the frameworks and the dyld shared cache (the sealed, read-only system volume)
; /Library/Apple: Apple's own frameworks and Rosetta's translation libraries
; /private/var/db/dyld: the dyld shared cache on older macOS
; /private/var/db/timezone: the time-zone database localtime() reads
; /Library/Developer/CommandLineTools: the command-line developer tools a build's clang and git are
; Xcode: the SDKs and compilers it holds
(allow file-read* (subpath "/usr/lib") (subpath "/usr/share") (subpath "/System") (subpath "/Library/Apple") (subpath "/private/var/db/dyld") (subpath "/private/var/db/timezone") (subpath "/Library/Developer/CommandLineTools") (regex #"^/Applications/Xcode[^/]*\.app(/|$)"))
; libraries are mapped executable: the system's, the toolchain's and the extension modules a build made
(allow file-map-executable (subpath "/usr/lib") (subpath "/usr/share") (subpath "/System") (subpath "/Library/Apple") (subpath "/private/var/db/dyld") (subpath "/private/var/db/timezone") (subpath "/Library/Developer/CommandLineTools") (subpath "/opt/py") (subpath "/Users/runner/in") (subpath "/Users/runner/stage") (regex #"^/Applications/Xcode[^/]*\.app(/|$)"))
; the stage's toolchain, its inputs and its own folders (HOME and TMPDIR among them)
(allow file-read* (subpath "/opt/py") (subpath "/Users/runner/in") (subpath "/Users/runner/stage"))
; the folders above each given path, for stat() while a path is resolved (no listing, no contents)
(allow file-read-metadata (literal "/") (literal "/opt") (literal "/Users") (literal "/Users/runner"))
; the stage's own folders only: its source copy, its output, its HOME and TMPDIR
(allow file-write* (subpath "/Users/runner/stage"))
; discarding output, zero pages, and /dev/fd for a shell's process substitution
(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero") (subpath "/dev/fd"))
; the random devices every runtime seeds from, and the local time zone
(allow file-read* (literal "/dev/random") (literal "/dev/urandom") (literal "/private/etc/localtime"))
; libSystem and runtimes read the CPU count, page size and OS version
(allow sysctl-read)
; com.apple.system.notification_center: libnotify: localtime() registers for time-zone changes
; com.apple.system.opendirectoryd.libinfo: getpwuid(): a process looks up its own user record
; com.apple.logd: os_log: the system's libraries log through it
(allow mach-lookup (global-name "com.apple.system.notification_center") (global-name "com.apple.system.opendirectoryd.libinfo") (global-name "com.apple.logd"))
; named semaphores (Python's multiprocessing locks); other accounts' are refused by their owner's permissions
(allow ipc-posix-sem)
; a build stops its own children; nothing outside the stage
(allow signal (target same-sandbox))
; a build waits for and inspects its own children only
(allow process-info* (target same-sandbox))
; the checkout, the key folders and the producer's output: last, so no allow reopens them
(deny file-read* file-write* file-map-executable process-exec (subpath "/Users/runner/work/repo") (subpath "/Users/runner/keys"))
"""  # noqa: E501 - the profile's own lines, exactly


def test_the_profile_of_a_sample_stage_is_exactly_this() -> None:
    assert profile(sample()) == EXPECTED


# -- a small SBPL reader: forms, strings (with escapes) and regex literals --------------------------------

_TOKEN = re.compile(r'\s+|;[^\n]*|\(|\)|#"(?:[^"\\]|\\.)*"|"(?:[^"\\]|\\.)*"|[^\s()";]+')


def parse(text: str) -> list[Any]:
    """The profile's top-level forms as nested lists; fails on an unbalanced or unreadable profile."""
    stack: list[list[Any]] = [[]]
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match is not None, f"unreadable profile at {text[position:position + 40]!r}"
        token, position = match.group(), match.end()
        if token.isspace() or token.startswith(";"):
            continue
        if token == "(":
            stack.append([])
        elif token == ")":
            assert len(stack) > 1, "a closing parenthesis without its opening one"
            form = stack.pop()
            stack[-1].append(form)
        elif token.startswith('"'):
            stack[-1].append(("string", re.sub(r"\\(.)", r"\1", token[1:-1])))
        else:
            stack[-1].append(token)
    assert len(stack) == 1, "an opening parenthesis is never closed"
    return stack[0]


def check_structure(text: str, protected: list[str]) -> None:
    forms = parse(text)
    assert forms[:2] == [["version", "1"], ["deny", "default"]]
    seen_deny_of_protected = False
    for form in forms[2:]:
        assert form[0] in ("allow", "deny"), form
        operations = [part for part in form[1:] if isinstance(part, str)]
        filters = [part for part in form[1:] if isinstance(part, list)]
        assert operations, form
        assert set(operations) <= KNOWN_OPERATIONS, form
        assert all(f[0] in KNOWN_FILTERS for f in filters), form
        if form[0] == "allow":
            assert not seen_deny_of_protected, "an allow after the protected paths' deny could reopen them"
            assert filters or f"(allow {' '.join(operations)})" in UNFILTERED, form
        else:
            paths = {f[1][1] for f in filters if f[0] == "subpath"}
            assert set(protected) <= paths
            assert {"file-read*", "file-write*", "process-exec"} <= set(operations)
            seen_deny_of_protected = True
    assert seen_deny_of_protected
    # Every rule stands after a comment that says why.
    lines = text.splitlines()
    for index, line in enumerate(lines[2:], start=2):
        if line.startswith("("):
            assert lines[index - 1].startswith("; "), line


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("sockets", [(), (Path("/Users/runner/stage/x11.sock"),)])
def test_the_profile_is_deny_by_default_and_denies_the_protected_paths_last(network: bool,
                                                                            sockets: tuple[Path, ...]) -> None:
    text = profile(sample(network, sockets))
    check_structure(text, ["/Users/runner/work/repo", "/Users/runner/keys"])
    forms = parse(text)
    outbound = [f for f in forms if f[:2] == ["allow", "network-outbound"]]
    assert (["allow", "network-outbound"] in outbound) is network
    assert bool(outbound) is (network or bool(sockets))
    assert (["allow", "system-socket"] in forms) is (network or bool(sockets))


def test_the_network_rules_of_a_stage_that_keeps_the_network_are_exactly_these() -> None:
    text = profile(sample(network=True))
    network = text[text.index("; creating a socket"):text.index("; the checkout, the key folders")]
    assert network == (
        "; creating a socket: the stage's local sockets or its network\n(allow system-socket)\n"
        "; the policy gives this stage the machine's network\n(allow network-outbound)\n"
        '; name resolution (mDNSResponder)\n(allow network-outbound (literal "/private/var/run/mDNSResponder"))\n'
        "; hosts, resolver settings, service names and the system's certificates\n"
        '(allow file-read* (literal "/private/etc/hosts") (literal "/private/etc/resolv.conf") '
        '(literal "/private/var/run/resolv.conf") (literal "/private/etc/services") '
        '(literal "/private/etc/protocols") (subpath "/private/etc/ssl"))\n'
        "; name resolution and certificate trust evaluation for TLS\n"
        '(allow mach-lookup (global-name "com.apple.dnssd.service") (global-name "com.apple.trustd") '
        '(global-name "com.apple.trustd.agent"))\n')


def test_a_rule_left_without_any_path_is_refused_rather_than_allowing_everywhere(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_qualify.producer.confinement import _macos_profile

    monkeypatch.setattr(_macos_profile, "_filters", lambda kind, paths: "")
    with pytest.raises(ConfinementError, match="would have no path"):
        profile(sample())


def test_the_structural_check_catches_an_allow_after_the_deny() -> None:
    with pytest.raises(AssertionError, match="reopen"):
        check_structure(EXPECTED + '; why\n(allow file-read* (subpath "/Users/runner/keys"))\n',
                        ["/Users/runner/keys"])
    with pytest.raises(AssertionError, match="never closed"):
        parse("(version 1")


def test_a_quote_or_a_backslash_stays_inside_its_string() -> None:
    odd = Path('/Users/runner/in/a"b\\c) (allow default')
    box = StageSandbox(stage="probe", home=Path("/s/home"), tmp=Path("/s/tmp"), writable=(Path("/s"),),
                       readable=(odd,), protected=(Path("/k"),))
    text = profile(box)
    assert sbpl_string(str(odd)) == '"/Users/runner/in/a\\"b\\\\c) (allow default"'
    check_structure(text, ["/k"])
    read = next(f for f in parse(text) if f[:2] == ["allow", "file-read*"] and ["subpath", ("string", "/s")] in f)
    assert ["subpath", ("string", str(odd))] in read


@pytest.mark.parametrize("field", ["writable", "readable", "toolchain", "protected"])
@pytest.mark.parametrize("char", ["\n", "\r", "\x00", "\x1b", "\x7f"])
def test_a_path_with_a_control_character_is_refused(field: str, char: str) -> None:
    bad = Path(f"/s/x{char}y")
    fields: dict[str, Any] = {"writable": (Path("/s"),), "readable": (), "toolchain": (), "protected": (Path("/k"),)}
    fields[field] = (*fields[field], bad)
    with pytest.raises(ConfinementError, match="control character"):
        profile(StageSandbox(stage="build", home=Path("/s/h"), tmp=Path("/s/t"), **fields))


def test_a_path_that_shows_a_protected_one_is_refused() -> None:
    writable = Path("/Users/runner")
    box = StageSandbox(stage="build", home=writable / "h", tmp=writable / "t", writable=(writable,),
                       protected=(Path("/Users/runner/keys"),))
    with pytest.raises(ConfinementError, match="would show"):
        profile(box)


def test_a_protected_folder_holding_the_stage_s_own_is_closed_by_default_not_by_name() -> None:
    # The output folder holds the stage's folders: (deny default) closes it down to them; a named deny of the
    # whole folder would be last and close the stage's own folders too. The key folder is still denied by name.
    out, keys = Path("/Users/runner/out"), Path("/Users/runner/keys")
    stage = out / "work" / "macos" / "home"
    text = profile(StageSandbox(stage="probe", home=stage, tmp=stage, writable=(stage,), protected=(out, keys)))
    deny = text.splitlines()[-1]
    assert deny.startswith("(deny file-read* file-write*")
    assert '"/Users/runner/keys"' in deny
    assert '"/Users/runner/out"' not in deny
    assert f'(subpath "{stage}")' in text


# -- the account, the command line and the sweep, through a recording runner ------------------------------


class FakeMac:
    """Answers the adapter's commands as a Mac with passwordless sudo would; records every argv."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.users: dict[str, dict[str, str]] = {}
        self.survive = 0  # how many pgrep rounds still find a process of the account
        self.id_says: str | None = None
        self.protected_visible = False
        self.acl = ""
        self.fail: str | None = None

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        assert kwargs["check"] is False
        assert kwargs["capture_output"] is True
        assert kwargs["timeout"]
        self.calls.append(list(argv))
        rc, out = self.answer(argv)
        return subprocess.CompletedProcess(argv, rc, out.encode(), b"")

    def answer(self, argv: list[str]) -> tuple[int, str]:
        if self.fail and " ".join(argv).startswith(self.fail):
            return 1, ""
        if argv[:3] == [DSCL, ".", "-read"]:
            user = self.users.get(argv[3].rsplit("/", 1)[1])
            return (0, "".join(f"{k}: {user[k]}\n" for k in argv[4:] if k in user)) if user else (56, "")
        if argv[:3] == [DSCL, ".", "-list"]:
            return 0, "root 0\nrunner 501\n_taken 400\n" if argv[3] == "/Users" else "staff 20\n_grp 401\n"
        if argv[:4] == [SUDO, "-n", DSCL, "."] and argv[5].startswith("/Users/") and len(argv) == 8:
            self.users.setdefault(argv[5].rsplit("/", 1)[1], {})[argv[6]] = argv[7]
            return 0, ""
        if argv[:2] == [SUDO, "-n"] and argv[2] == "-u":
            name = argv[3]
            if argv[-2:] == ["/usr/bin/id", "-u"]:
                return 0, (self.id_says or self.users[name]["UniqueID"]) + "\n"
            if argv[-4:-2] == ["/bin/ls", "-d"]:
                return (0 if self.protected_visible else 1), ""
        if argv[0] == "/bin/ls":
            return 0, f"drwx------  3 runner  staff  96 Jan  1 00:00 {argv[-1]}\n{self.acl}"
        if argv[0] == "/usr/bin/pgrep":
            if self.survive:
                self.survive -= 1
                return 0, "4242\n"
            return 1, ""
        if argv[:3] == [SUDO, "-n", "/usr/bin/pkill"]:
            return 1, ""
        return 0, ""


def fake_stat(modes: dict[str, tuple[int, int]]) -> Any:
    def stat_path(path: Path) -> os.stat_result:
        if str(path) == "/missing":
            raise FileNotFoundError(path)
        # The checkout is the runner's alone, as the producer leaves it; every other folder is open to pass.
        mode, uid = modes.get(str(path), (0o700, 501) if path.name == "checkout" else (0o755, 0))
        return os.stat_result((stat.S_IFDIR | mode, 0, 0, 0, uid, 0, 0, 0, 0, 0))

    return stat_path


@pytest.fixture
def stage(tmp_path: Path) -> StageSandbox:
    (tmp_path / "stage" / "home").mkdir(parents=True)
    (tmp_path / "stage" / "tmp").mkdir()
    (tmp_path / "stage" / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "stage" / "src" / "link").symlink_to(tmp_path / "elsewhere")
    root = tmp_path / "stage"
    return StageSandbox(stage="build", home=root / "home", tmp=root / "tmp", writable=(root,),
                        toolchain=(Path("/opt/py"),), protected=(tmp_path / "checkout", Path("/missing")),
                        cwd=root / "src")


def adapter(mac: FakeMac, modes: dict[str, tuple[int, int]] | None = None) -> SandboxExecConfinement:
    return SandboxExecConfinement(mac, platform="darwin", exists=lambda p: True, stat_path=fake_stat(modes or {}),
                                  runner_user="runner", runner_uid=501, sleep=lambda s: None)


def test_the_account_is_made_hidden_with_its_own_group_and_no_shell() -> None:
    assert create_commands("_qualify_app1", 402) == [
        [SUDO, "-n", DSCL, ".", "-create", "/Groups/_qualify_app1"],
        [SUDO, "-n", DSCL, ".", "-create", "/Groups/_qualify_app1", "PrimaryGroupID", "402"],
        [SUDO, "-n", DSCL, ".", "-create", "/Groups/_qualify_app1", "Password", "*"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "UniqueID", "402"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "PrimaryGroupID", "402"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "UserShell", "/usr/bin/false"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "NFSHomeDirectory", "/var/empty"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "RealName", "desktop-qualify app code"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "Password", "*"],
        [SUDO, "-n", DSCL, ".", "-create", "/Users/_qualify_app1", "IsHidden", "1"],
    ]


def test_wrap_makes_the_account_grants_its_folders_and_starts_the_command_as_it(stage: StageSandbox) -> None:
    mac = FakeMac()
    command = adapter(mac, {"/opt": (0o750, 501)}).wrap(["make", "all"], stage, {"PATH": "/usr/bin", "LANG": "C"})
    text = profile(stage)
    assert command.argv == [
        SUDO, "-n", "-u", "_qualify_app1", "--", "/usr/bin/env", "-i", "PATH=/usr/bin", "LANG=C",
        f"HOME={stage.home}", f"TMPDIR={stage.tmp}", "USER=_qualify_app1", "LOGNAME=_qualify_app1",
        "/usr/bin/sandbox-exec", "-p", text, "/bin/sh", "-c", CHDIR_SCRIPT, "sh", str(stage.cwd), "make", "all"]
    assert command.env == {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}  # sudo's own: nothing of the producer's
    creates = [c for c in mac.calls if c[:4] == [SUDO, "-n", DSCL, "."]]
    assert creates == create_commands("_qualify_app1", 402)  # 400 is a user's, 401 a group's
    root = str(stage.writable[0])
    folders = sorted([root, f"{root}/home", f"{root}/tmp", f"{root}/src", f"{root}/src/pkg"])
    chmods = [c for c in mac.calls if c[0] == "/bin/chmod"]
    assert [c[:3] for c in chmods[:2]] == [["/bin/chmod", "+a", "runner allow read,write,append,execute,delete,"
                                            "delete_child,readattr,writeattr,readextattr,writeextattr,readsecurity,"
                                            "writesecurity,chown,file_inherit,directory_inherit"],
                                           ["/bin/chmod", "+a", "_qualify_app1 allow read,write,append,execute,"
                                            "delete,delete_child,readattr,writeattr,readextattr,writeextattr,"
                                            "readsecurity,file_inherit,directory_inherit"]]
    assert sorted(chmods[0][3:]) == folders == sorted(chmods[1][3:])  # the symlink's target is not among them
    # Only /opt is closed to others (0o750) and the runner's: it alone gets the search-only entry.
    assert chmods[2:] == [["/bin/chmod", "+a", "_qualify_app1 allow search", "/opt"]]
    preflight = [c for c in mac.calls if c[:3] == [SUDO, "-n", "-u"]]
    assert preflight == [
        [SUDO, "-n", "-u", "_qualify_app1", "--", "/usr/bin/env", "-i", "/usr/bin/sandbox-exec", "-p", text,
         "/usr/bin/id", "-u"],
        [SUDO, "-n", "-u", "_qualify_app1", "--", "/usr/bin/env", "-i", "/usr/bin/sandbox-exec", "-p", text,
         "/bin/ls", "-d", "--", str(stage.protected[0])],
        [SUDO, "-n", "-u", "_qualify_app1", "--", "/usr/bin/env", "-i", "/usr/bin/sandbox-exec", "-p", text,
         "/bin/ls", "-d", "--", "/missing"]]


def test_finish_kills_every_process_of_the_account_and_reports_the_layers(stage: StageSandbox) -> None:
    mac = FakeMac()
    command = adapter(mac).wrap(["make"], stage, {})
    mac.calls.clear()
    mac.survive = 1  # one round finds a process left; the next finds none
    facts = command.finish()
    kill = [[SUDO, "-n", "/usr/bin/pkill", "-KILL", "-U", "_qualify_app1"],
            [SUDO, "-n", "/usr/bin/pkill", "-KILL", "-u", "_qualify_app1"]]
    look = [["/usr/bin/pgrep", "-U", "_qualify_app1"], ["/usr/bin/pgrep", "-u", "_qualify_app1"]]
    assert mac.calls == kill + look + kill + look
    assert facts.mechanism == "sandbox-exec"
    assert facts.layers == MACOS_LAYERS
    assert facts.network is False
    assert "_qualify_app1 (uid 402)" in facts.detail


def test_a_process_that_survives_the_kills_fails_the_stage_and_retires_the_account(stage: StageSandbox) -> None:
    mac = FakeMac()
    confinement = adapter(mac)
    command = confinement.wrap(["make"], stage, {})
    mac.survive = 10**6
    with pytest.raises(ConfinementError, match="survived 10 kills: 4242"):
        command.finish()
    command.close()
    mac.survive = 0
    again = confinement.wrap(["make"], stage, {})
    assert again.argv[3] == "_qualify_app2"  # never the account whose process may still run
    again.finish()
    again.close()
    assert confinement.wrap(["make"], stage, {}).argv[3] == "_qualify_app2"


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701, 0o710])
def test_a_protected_path_open_to_group_or_others_is_refused(stage: StageSandbox, mode: int) -> None:
    mac = FakeMac()
    with pytest.raises(ConfinementError, match="open to its group or others"):
        adapter(mac, {str(stage.protected[0]): (mode, 501)}).wrap(["make"], stage, {})
    assert not [c for c in mac.calls if c[:3] == [SUDO, "-n", DSCL]]  # refused before any account is made


def test_a_protected_path_with_an_acl_entry_allowing_others_is_refused(stage: StageSandbox) -> None:
    mac = FakeMac()
    mac.acl = " 0: group:everyone deny delete\n 1: user:runner allow list\n"
    adapter(mac).wrap(["make"], stage, {})  # a deny, and the runner's own entry: fine
    mac.acl += " 2: group:everyone allow list,search\n"
    with pytest.raises(ConfinementError, match="ACL entry allowing others"):
        adapter(mac).wrap(["make"], stage, {})


def test_a_profile_that_shows_a_protected_path_or_runs_as_someone_else_is_refused(stage: StageSandbox) -> None:
    mac = FakeMac()
    mac.protected_visible = True
    with pytest.raises(ConfinementError, match="visible under the profile"):
        adapter(mac).wrap(["make"], stage, {})
    mac = FakeMac()
    mac.id_says = "501"
    with pytest.raises(ConfinementError, match="did not run as _qualify_app1"):
        adapter(mac).wrap(["make"], stage, {})


def test_a_closed_folder_above_the_stage_that_is_not_the_runners_is_refused(stage: StageSandbox) -> None:
    with pytest.raises(ConfinementError, match="/opt is closed to other accounts"):
        adapter(FakeMac(), {"/opt": (0o700, 0)}).wrap(["make"], stage, {})


def test_an_existing_account_of_that_name_that_is_not_ours_is_refused(stage: StageSandbox) -> None:
    mac = FakeMac()
    mac.users["_qualify_app1"] = {"UniqueID": "501", "PrimaryGroupID": "20", "UserShell": "/bin/zsh"}
    with pytest.raises(ConfinementError, match="not an app account"):
        adapter(mac).wrap(["make"], stage, {})


@pytest.mark.parametrize("env", [{"ACTIONS_ID_TOKEN_REQUEST_TOKEN": "x"}, {"ACTIONS_ID_TOKEN_REQUEST_URL": "x"},
                                 {"NPM_TOKEN": "x"}, {"A=B": "x"}, {"-i": "x"}, {"OK": "a\0b"}])
def test_an_environment_that_carries_a_credential_or_an_odd_name_is_refused(stage: StageSandbox,
                                                                           env: dict[str, str]) -> None:
    with pytest.raises(ConfinementError):
        adapter(FakeMac()).wrap(["make"], stage, env)


def test_unavailable_says_what_is_missing() -> None:
    mac = FakeMac()
    assert SandboxExecConfinement(mac, platform="linux").unavailable() == "sandbox-exec confines app code on macOS only"
    assert "sandbox-exec is missing" in (SandboxExecConfinement(mac, platform="darwin", exists=lambda p: False)
                                         .unavailable() or "")
    mac.fail = f"{SUDO} -n /usr/bin/true"
    assert "passwordless sudo" in (SandboxExecConfinement(mac, platform="darwin", exists=lambda p: True)
                                   .unavailable() or "")
    assert SandboxExecConfinement(FakeMac(), platform="darwin", exists=lambda p: True).unavailable() is None
    with pytest.raises(ConfinementError, match="macOS only"):
        SandboxExecConfinement(mac, platform="linux").wrap(["true"], sample(), {})


def test_a_failed_account_command_is_an_error(stage: StageSandbox) -> None:
    mac = FakeMac()
    mac.fail = f"{SUDO} -n {DSCL} . -create /Users/_qualify_app1 UserShell"
    with pytest.raises(ConfinementError, match="creating the app account failed"):
        adapter(mac).wrap(["make"], stage, {})
