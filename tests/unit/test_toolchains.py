"""Toolchains without machine paths (issue 33 item 5): ``{node}``, ``{python}`` or a named tool in the probe's,
journey's and state verbs' commands, resolved once on the producer's machine, refused with a code when it is not
a regular executable file or would show a protected path, substituted exactly, its folder bound read-only, and
recorded with its path, digest and version."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, InstallRecord, QualificationError
from desktop_qualify.producer import _toolchains
from desktop_qualify.producer._launch import RunPlan, launch_probe
from desktop_qualify.producer._toolchains import (
    Toolchains,
    install_prefix,
    query_versions,
    resolve_one,
    resolve_toolchains,
)
from desktop_qualify.producer.confinement import (
    ConfinedCommand,
    StageRunner,
    StageSandbox,
    Unconfined,
    producer_python,
)
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import load_policy
from support.evidence_factory import make_keys, policy_text
from support.stage_runners import unconfined_runner

pytestmark = pytest.mark.skipif(sys.platform.startswith("win"), reason="the fake tools are POSIX shell scripts")

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"


def _tool(folder: Path, name: str, body: str = "echo 'tool 1.2.3'", mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(mode)
    return path


def _refused(call: object, *args: object, **kwargs: object) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    assert caught.value.code is Code.TOOLCHAIN_UNAVAILABLE
    assert caught.value.exit_status == 2
    return caught.value


# --- the policy ---------------------------------------------------------------------------------------------


def _policy(tmp_path: Path, *, toolchains: str = "", journey: str = '["{node}", "run.js", "{record}"]') -> Path:
    keys = make_keys(tmp_path / "keys")
    text = policy_text(keys)
    text = text.replace('argv = ["{executable}", "journey", "--record", "{record}"]', f"argv = {journey}")
    assert f"argv = {journey}" in text
    if toolchains:
        text = text.replace("[app.codes]", f"[app.toolchains]\n{toolchains}\n\n[app.codes]")
        assert "[app.toolchains]" in text
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _policy_refused(path: Path) -> str:
    with pytest.raises(QualificationError) as caught:
        load_policy(path)
    assert caught.value.code is Code.POLICY_INVALID
    return caught.value.diagnostics()


def test_a_named_toolchain_is_a_placeholder_of_the_run_commands(tmp_path: Path) -> None:
    policy = load_policy(_policy(tmp_path, toolchains='node = "node"\npy = "/opt/python/bin/python3"\n'
                                                      "win = 'C:\\Program Files\\nodejs\\node.exe'"))
    assert policy.file.app.toolchains == {"node": "node", "py": "/opt/python/bin/python3",
                                          "win": "C:\\Program Files\\nodejs\\node.exe"}
    assert policy.file.app.journey.argv == ["{node}", "run.js", "{record}"]


@pytest.mark.parametrize(("toolchains", "journey", "why"), [
    # Not named: a typo or a tool the policy never resolved is refused, never passed on as text.
    ("", '["{node}", "run.js"]', "unknown placeholder(s) node"),
    ('node = "node"', '["{nodejs}", "run.js"]', "unknown placeholder(s) nodejs"),
    # The job's own placeholders cannot be taken over.
    ('record = "node"', '["{record}"]', "cannot name record"),
    ('executable = "/bin/sh"', '["{executable}"]', "cannot name executable"),
    # A relative path would depend on the folder the command runs in; '..' is refused.
    ('node = "tools/node"', '["{node}"]', "must be an executable name"),
    ('node = "/opt/../home/node"', '["{node}"]', "must be an executable name"),
    ('node = "node\\u0007"', '["{node}"]', "control character"),
    # Placeholder names are lowercase letters: the placeholder syntax.
    ('node2 = "node"', '["{executable}", "journey", "--record", "{record}"]', "node2"),
])
def test_toolchain_policy_errors_are_refused(tmp_path: Path, toolchains: str, journey: str, why: str) -> None:
    assert why in _policy_refused(_policy(tmp_path, toolchains=toolchains, journey=journey))


def test_the_build_keeps_its_own_placeholders(tmp_path: Path) -> None:
    # [app.toolchains] names the run commands' tools; the build's {node} stays unknown.
    path = _policy(tmp_path, toolchains='node = "node"')
    path.write_text(path.read_text().replace('"{python}", "tools/build_release.py"', '"{node}", "build.js"'))
    assert "unknown placeholder(s) node" in _policy_refused(path)


# --- resolution ---------------------------------------------------------------------------------------------


def test_a_name_is_looked_up_on_the_producers_path_once_and_its_prefix_is_bound(tmp_path: Path) -> None:
    node = _tool(tmp_path / "opt" / "node" / "bin", "node")
    _tool(tmp_path / "elsewhere", "node", "echo other")
    path = f"{tmp_path / 'opt' / 'node' / 'bin'}:{tmp_path / 'elsewhere'}"
    tool = resolve_one("node", "node", path_variable=path, protected=(), out=tmp_path / "out")
    assert (tool.path, tool.resolved) == (node, node.resolve())
    assert tool.sha256 == hashlib.sha256(node.read_bytes()).hexdigest()
    assert tool.folders == (tmp_path / "opt" / "node",)


def test_a_link_is_substituted_as_found_and_both_prefixes_are_bound(tmp_path: Path) -> None:
    # A virtual environment's interpreter is a link out of it: the venv's path is what runs (it finds its
    # site-packages from there), and the file it links to must be visible too.
    real = _tool(tmp_path / "base" / "bin", "python3.12")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(real)
    tool = resolve_one("python", str(venv / "python"), path_variable=None, protected=(), out=tmp_path / "out")
    assert (tool.path, tool.resolved) == (venv / "python", real.resolve())
    assert tool.folders == (tmp_path / "venv", tmp_path / "base")


def test_install_prefix() -> None:
    assert install_prefix(Path("/opt/node/bin/node")) == Path("/opt/node")
    assert install_prefix(Path("/venv/Scripts/python.exe")) == Path("/venv")
    assert install_prefix(Path("/tools/node")) == Path("/tools")
    assert install_prefix(Path("/bin/sh")) == Path("/")


def test_missing_and_non_executable_tools_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    why = _refused(resolve_one, "node", "node", path_variable=str(tmp_path), protected=(), out=out)
    assert "not on the producer's PATH" in why.message
    why = _refused(resolve_one, "node", str(tmp_path / "nowhere" / "node"), path_variable=None, protected=(),
                   out=out)
    assert "does not exist" in why.message
    plain = _tool(tmp_path / "plain", "node", mode=0o644)
    why = _refused(resolve_one, "node", str(plain), path_variable=None, protected=(), out=out)
    assert "not a regular executable file" in why.message
    # shutil.which skips a file it cannot run; a folder named like the tool is not one either.
    (tmp_path / "dir" / "node").mkdir(parents=True)
    why = _refused(resolve_one, "node", str(tmp_path / "dir" / "node"), path_variable=None, protected=(), out=out)
    assert "not a regular executable file" in why.message
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "node").symlink_to(tmp_path / "gone")
    _refused(resolve_one, "node", str(dangling / "node"), path_variable=None, protected=(), out=out)


def test_a_relative_path_entry_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tool(tmp_path / "rel", "node")
    monkeypatch.chdir(tmp_path)
    why = _refused(resolve_one, "node", "node", path_variable="rel", protected=(), out=tmp_path / "out")
    assert "a relative path" in why.message


def test_a_tool_whose_folder_shows_a_protected_path_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # HOME/bin/node: its prefix is HOME itself, which no stage may see.
    node = _tool(home / "bin", "node")
    why = _refused(resolve_one, "node", str(node), path_variable=None, protected=(home.resolve(),),
                   out=tmp_path / "out")
    assert f"would show {home.resolve()}" in why.message
    # A tool in its own folder under HOME is fine: only that folder is bound.
    nvm = _tool(home / ".nvm" / "v20" / "bin", "node")
    assert resolve_one("node", str(nvm), path_variable=None, protected=(home.resolve(),),
                       out=tmp_path / "out").folders == (home / ".nvm" / "v20",)
    # A link that leads into a key folder's parent shows the keys.
    keys = tmp_path / "repo" / ".qualify"
    _tool(keys.parent / "bin", "real-node")
    (tmp_path / "link" / "bin").mkdir(parents=True)
    (tmp_path / "link" / "bin" / "node").symlink_to(keys.parent / "bin" / "real-node")
    why = _refused(resolve_one, "node", str(tmp_path / "link" / "bin" / "node"), path_variable=None,
                   protected=(keys.resolve(),), out=tmp_path / "out")
    assert f"would show {keys.resolve()}" in why.message


def test_a_tool_in_the_output_folder_is_refused(tmp_path: Path) -> None:
    # What lies there, app stages wrote (the build's output, the installed tree).
    node = _tool(tmp_path / "out" / "work" / "linux" / "install" / "bin", "node")
    why = _refused(resolve_one, "node", str(node), path_variable=None, protected=(), out=tmp_path / "out")
    assert "output folder" in why.message


def test_python_is_the_producers_unless_named_and_only_when_used(tmp_path: Path) -> None:
    out = tmp_path / "out"
    uses = [["{python}", "run.py"], ["{executable}", "probe"]]
    found = resolve_toolchains({}, uses, path_variable=None, protected=(), out=out)
    assert [(t.name, t.requested, str(t.path)) for t in found.chosen] == [("python", "{python}", producer_python())]
    assert resolve_toolchains({}, [["{executable}", "probe"]], path_variable=None, protected=(), out=out).chosen == ()
    other = _tool(tmp_path / "py" / "bin", "python3")
    named = resolve_toolchains({"python": str(other)}, uses, path_variable=None, protected=(), out=out)
    assert named.values() == {"python": str(other)}
    assert named.folders() == (tmp_path / "py",)


# --- the version, asked confined --------------------------------------------------------------------------


class _Recording(Unconfined):
    """Runs the command unconfined and keeps what it was asked to run, and with what sandbox."""

    def __init__(self) -> None:
        super().__init__("unit test")
        self.calls: list[tuple[list[str], StageSandbox]] = []

    def wrap(self, argv: Sequence[str], sandbox: StageSandbox, env: Mapping[str, str]) -> ConfinedCommand:
        self.calls.append((list(argv), sandbox))
        return super().wrap(argv, sandbox, env)


def test_the_version_is_asked_once_confined_with_exactly_path_and_version(tmp_path: Path) -> None:
    node = _tool(tmp_path / "opt" / "node" / "bin", "node", 'echo "v20.11.1"; echo second line')
    tools = resolve_toolchains({"node": str(node)}, [], path_variable=None, protected=(), out=tmp_path / "out")
    recording = _Recording()
    runner = StageRunner(recording, ())
    records = query_versions(tools, runner, tmp_path / "work")
    assert [(argv, sandbox.stage) for argv, sandbox in recording.calls] == [([str(node), "--version"], "probe")]
    sandbox = recording.calls[0][1]
    assert tmp_path / "opt" / "node" in sandbox.toolchain
    assert not sandbox.network
    [record] = records
    assert (record.name, record.requested, record.path, record.version) == ("node", str(node), str(node), "v20.11.1")
    assert record.sha256 == file_sha256(node)
    assert record.folders == [str(tmp_path / "opt" / "node")]
    assert [fact.stage for fact in runner.facts] == ["probe"]
    assert not (tmp_path / "work" / "toolchain-node").exists()


@pytest.mark.parametrize(("body", "why"), [("exit 3", "exit 3"), ("true", "exit 0"), ("sleep 5", "timed out")])
def test_a_version_that_fails_refuses_the_toolchain(tmp_path: Path, body: str, why: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_toolchains, "_VERSION_TIMEOUT", 1)
    node = _tool(tmp_path / "n" / "bin", "node", body)
    tools = resolve_toolchains({"node": str(node)}, [], path_variable=None, protected=(), out=tmp_path / "out")
    error = _refused(query_versions, tools, unconfined_runner(), tmp_path / "work")
    assert why in error.message


def test_a_version_on_stderr_is_taken(tmp_path: Path) -> None:
    java = _tool(tmp_path / "j" / "bin", "java", 'echo "openjdk 21" >&2')
    tools = resolve_toolchains({"java": str(java)}, [], path_variable=None, protected=(), out=tmp_path / "out")
    assert [r.version for r in query_versions(tools, unconfined_runner(), tmp_path / "work")] == ["openjdk 21"]


# --- substitution into the probe's command --------------------------------------------------------------------


def _installed(prefix: Path) -> InstallRecord:
    exe = prefix / "app" / "app"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    exe.chmod(0o755)
    return InstallRecord(artifact_sha256="1" * 64, method="archive", file_count=1, total_bytes=exe.stat().st_size,
                         manifest_sha256=manifest_sha256(tree_manifest(prefix)), executable="app/app",
                         executable_sha256=file_sha256(exe), duration_ms=1, passed=True)


def test_placeholders_are_substituted_exactly_and_the_tool_folder_is_bound(tmp_path: Path) -> None:
    node = _tool(tmp_path / "opt" / "node" / "bin", "node", "exit 0")
    tools = resolve_toolchains({"node": "node"}, [], path_variable=str(node.parent), protected=(),
                               out=tmp_path / "out")
    prefix = tmp_path / "work" / "install"
    install = _installed(prefix)
    recording = _Recording()
    argv = ["{node}", "--app={executable}", "{record}", "{python}", "literal"]

    def no_export(dest: Path) -> Path:
        raise AssertionError("no source asked for")

    plan = RunPlan(argv=["{executable}", *argv], display="none", timeout=30, export_source=no_export,
                   runner=StageRunner(recording, ()), stage="probe", toolchains=tools)
    record = launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, plan=plan,
                          required_checks=[], required_layers=None)
    [(ran, sandbox)] = recording.calls
    exe, record_path = prefix / "app" / "app", tmp_path / "work" / "record-probe" / "record.json"
    assert ran == [str(exe), str(node), f"--app={exe}", str(record_path), producer_python(), "literal"]
    assert tmp_path / "opt" / "node" in sandbox.toolchain
    assert tmp_path / "opt" / "node" not in sandbox.writable
    # The record keeps the policy's placeholders: no machine path in the command.
    assert record.command == ["{executable}", *argv]


def test_without_toolchains_python_is_the_producers(tmp_path: Path) -> None:
    prefix = tmp_path / "work" / "install"
    install = _installed(prefix)
    recording = _Recording()
    plan = RunPlan(argv=["{executable}", "{python}"], display="none", timeout=30, export_source=lambda d: d,
                   runner=StageRunner(recording, ()), stage="probe", toolchains=Toolchains())
    launch_probe(prefix=prefix, install=install, platform="linux", gate_sha=SHA, plan=plan, required_checks=[],
                 required_layers=None)
    assert recording.calls[0][0] == [str(prefix / "app" / "app"), producer_python()]
