"""One output rule and one repetition rule for every command (issue 32, items 1, 2, 3, 5 and 8).

- An output may not be an input of the same command (by device and inode, links resolved): QE_OUTPUT_IS_INPUT,
  exit 2, the input untouched.
- An output may not be a link, a FIFO or a device; ``-`` is standard output and the human text then goes to
  standard error (``/dev/stdout`` is a link: refused, with the advice to use ``-``).
- ``qualify bundle --out LINK`` is refused like any other output.
- A repeatable option keeps every value; a single-value option given twice is refused (the drift test in
  tests/unit_docs holds that for every option of every subcommand).
- Ctrl-C is QE_INTERRUPTED, exit 130; a VSA input that is a FIFO is an unusable input, exit 2.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from desktop_qualify.qualify_errors import Code, QualificationError
from desktop_qualify.qualify_runtime import check_outputs, guarded
from desktop_qualify.qualify_trust import add_to_keyring, generate_private_key
from support.cli import CliRun
from support.evidence_factory import Evidence, make_evidence
from support.snapshot import snapshot

Qualify = Callable[[list[str]], CliRun]
posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, hard links and /dev/stdout are POSIX")
TIMEOUT = 120



@pytest.fixture
def ev(tmp_path: Path) -> Evidence:
    return make_evidence(tmp_path / "run")


def _refused_as_input(result: CliRun) -> None:
    assert result.status == 2, result.text
    assert "QE_OUTPUT_IS_INPUT" in result.err
    assert "QUALIFIED" not in result.text


# -- item 1: an output is never an input -----------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--json", "--summary", "--vsa"])
def test_verify_refuses_an_output_onto_its_own_artifact_and_leaves_it(qualify: Qualify, ev: Evidence,
                                                                      tmp_path: Path, option: str) -> None:
    before = snapshot(tmp_path)
    _refused_as_input(qualify(ev.verify_argv(option, str(ev.artifact_paths[0]))))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target", ["aggregate", "policy", "keyring"])
def test_verify_refuses_an_output_onto_a_statement_the_policy_or_its_keyring(qualify: Qualify, ev: Evidence,
                                                                             tmp_path: Path, target: str) -> None:
    path = {"aggregate": ev.evidence_dir / "aggregate.dsse.json", "policy": ev.policy_path,
            "keyring": ev.keys.keyring}[target]
    before = snapshot(tmp_path)
    _refused_as_input(qualify(ev.verify_argv("--json", str(path))))
    assert snapshot(tmp_path) == before


@posix_only
@pytest.mark.parametrize("spelling", ["hard-link", "climbing"])
def test_an_input_under_another_name_is_still_the_input(qualify: Qualify, ev: Evidence, tmp_path: Path,
                                                        spelling: str) -> None:
    artifact = ev.artifact_paths[0]
    if spelling == "hard-link":
        other = tmp_path / "other-name.json"
        os.link(artifact, other)
    else:
        other = artifact.parent / ".." / artifact.parent.name / artifact.name
    before = snapshot(tmp_path)
    _refused_as_input(qualify(ev.verify_argv("--json", str(other))))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--json", "--html", "--markdown"])
def test_audit_refuses_an_output_onto_its_own_policy_or_evidence(qualify: Qualify, ev: Evidence, tmp_path: Path,
                                                                 option: str) -> None:
    before = snapshot(tmp_path)
    for target in (ev.policy_path, ev.evidence_dir / "aggregate.dsse.json"):
        _refused_as_input(qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                                   option, str(target)]))
    assert snapshot(tmp_path) == before


def test_rebuild_refuses_an_attestation_onto_its_key_or_evidence(qualify: Qualify, ev: Evidence,
                                                                 tmp_path: Path) -> None:
    key = ev.keys.keyring.parent / "rebuilder.pem"
    key.write_text("not read: refused before\n")
    before = snapshot(tmp_path)
    for target in (key, ev.evidence_dir / "aggregate.dsse.json"):
        _refused_as_input(qualify(["rebuild", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                                   "--attest", str(target), "--key", str(key)]))
    assert snapshot(tmp_path) == before


@posix_only
def test_bundle_refuses_an_out_that_is_its_policy_under_a_bundle_name(qualify: Qualify, ev: Evidence,
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "run.qualify-bundle.zip"
    os.link(ev.policy_path, out)
    before = snapshot(tmp_path)
    result = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--out", str(out)])
    assert result.status == 2, result.text
    assert "QE_OUTPUT_IS_INPUT" in result.err
    assert snapshot(tmp_path) == before


# -- item 1 and 3: no link, FIFO or device; bundle --out included ----------------------------------------------

@posix_only
@pytest.mark.parametrize("kind", ["link-to-new-file", "link-to-null", "link-to-stdout", "fifo"])
@pytest.mark.parametrize("option", ["--json", "--summary", "--vsa"])
def test_a_link_or_fifo_output_is_refused_and_left_as_it_is(qualify: Qualify, ev: Evidence, tmp_path: Path,
                                                            kind: str, option: str) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    out = outputs / "out"
    if kind == "fifo":
        os.mkfifo(out)
    else:
        out.symlink_to({"link-to-new-file": str(outputs / "absent"), "link-to-null": os.devnull,
                        "link-to-stdout": "/proc/self/fd/1"}[kind])
    before = snapshot(outputs)
    result = qualify(ev.verify_argv(option, str(out)))
    assert result.status == 2, result.text
    assert f"QE_USAGE: {option} {out}: " in result.err
    assert "use - for standard output" in result.err
    assert snapshot(outputs) == before


@posix_only
@pytest.mark.parametrize("system", [os.devnull, "/dev/stdout"])
def test_a_system_device_or_link_is_refused_by_the_check_that_writes_nothing(system: str) -> None:
    """Checked through check_outputs, which never writes: a regression here cannot replace /dev/null as root."""
    with pytest.raises(QualificationError) as refused:
        check_outputs([("--json", Path(system))])
    assert refused.value.code == Code.USAGE
    assert refused.value.message.startswith(f"--json {system}: a ")
    assert "use - for standard output" in refused.value.message


@posix_only
def test_bundle_out_that_is_a_link_is_refused_and_the_link_kept(qualify: Qualify, ev: Evidence,
                                                                tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    victim = outputs / "victim.txt"
    victim.write_text("not yours\n")
    link = outputs / "run.qualify-bundle.zip"
    link.symlink_to(victim)
    before = snapshot(outputs)
    result = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--out", str(link)])
    assert result.status == 2, result.text
    assert "a symbolic link" in result.err
    assert snapshot(outputs) == before


# -- item 5: `--json -` piped is exactly the JSON; /dev/stdout is refused with the advice ----------------------

@posix_only
@pytest.mark.parametrize("command", ["verify", "audit"])
def test_json_dash_into_a_pipe_is_the_json_alone(ev: Evidence, command: str) -> None:
    argv = ev.verify_argv("--json", "-") if command == "verify" else [
        "audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--json", "-"]
    done = subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *argv], capture_output=True,
                          timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decision"] == "QUALIFIED"  # nothing but the document
    assert b"QUALIFIED" in done.stderr


@posix_only
def test_dev_stdout_is_refused_with_the_advice_to_use_dash(qualify: Qualify, ev: Evidence) -> None:
    """Today's `--json /dev/stdout` mixed the verdict into the JSON; it is refused before any work now.

    /dev/stdout's own shape (a link to /proc/self/fd/1) in a folder of ours is written by the command; /dev/stdout
    itself only by check_outputs (above), so a regression cannot replace the machine's /dev/stdout as root.
    """
    link = ev.root / "stdout"
    link.symlink_to("/proc/self/fd/1")
    result = qualify(ev.verify_argv("--json", str(link)))
    assert result.status == 2, result.text
    assert f"QE_USAGE: --json {link}: a symbolic link" in result.err
    assert "use - for standard output" in result.err
    assert result.out == ""
    assert link.is_symlink()


# -- item 2: a repeatable option keeps every value -------------------------------------------------------------

def test_audit_evidence_given_twice_audits_both_folders(qualify: Qualify, tmp_path: Path) -> None:
    first, second = make_evidence(tmp_path / "a"), make_evidence(tmp_path / "b")
    result = qualify(["audit", "--policy", str(first.policy_path), "--evidence", str(first.evidence_dir),
                      "--evidence", str(second.evidence_dir), "--json", str(tmp_path / "report.json")])
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["runs"]) == 2, result.text
    assert "1 run(s) in 1 folder(s)" not in result.text


def test_a_single_value_option_given_twice_is_refused_naming_it(qualify: Qualify, ev: Evidence,
                                                                tmp_path: Path) -> None:
    result = qualify(["audit", "--policy", str(ev.policy_path), "--policy", str(ev.policy_path),
                      "--evidence", str(ev.evidence_dir)])
    assert result.status == 2
    assert "QE_USAGE: --policy given twice" in result.err


# -- item 8: interruption and an unusable VSA input -------------------------------------------------------------

def test_an_interruption_is_qe_interrupted_with_exit_130(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> int:
        raise KeyboardInterrupt

    assert guarded(body) == 130
    err = capsys.readouterr().err
    assert err.startswith("QE_INTERRUPTED: ")
    assert "QE_USAGE" not in err


@posix_only
def test_verify_vsa_on_a_fifo_is_an_unusable_input_exit_2(qualify: Qualify, ev: Evidence, tmp_path: Path) -> None:
    # A verifier key in the keyring, so the FIFO is what is refused, not the policy.
    path = ev.keys.keyring.parent / "keys" / "verifier.ed25519.pem"
    key = generate_private_key(path)
    add_to_keyring(ev.keys.keyring, "local-verifier", key.public_key(), ["verifier"])
    text = ev.policy_path.read_text(encoding="utf-8")
    ev.policy_path.write_text(text.replace("\n[source]", f"\nverifier_key = {json.dumps(str(path))}\n[source]", 1),
                              encoding="utf-8")
    fifo = tmp_path / "vsa.intoto.jsonl"
    os.mkfifo(fifo)
    result = qualify(["verify-vsa", "--policy", str(ev.policy_path), "--artifact", str(ev.artifact_paths[0]),
                      str(fifo)])
    assert result.status == 2, result.text
    assert "QE_INPUT_NOT_REGULAR" in result.err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
