"""Hostile evidence text cannot drive the terminal: control and format characters reach the screen escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from desktop_qualify.qualify_runtime import terminal_safe
from support.evidence_factory import make_evidence

FORGERY = "\r\x1b[2K\x1b[1A\x1b]0;owned\x07QUALIFIED\u202e"


def test_control_and_format_characters_are_escaped_and_lines_kept() -> None:
    shown = terminal_safe(f"line one\n\tline two {FORGERY}")
    assert shown.startswith("line one\n\tline two ")
    assert "\x1b" not in shown
    assert "\r" not in shown
    assert "\u202e" not in shown
    assert "\\x1b[2K" in shown
    assert "\\x0d" in shown
    assert "\\u202e" in shown


def test_plain_text_is_untouched() -> None:
    text = "QE_PROBE_FAILED [linux]: platform-linux.dsse.json: the launch probe exited 3 — ünïcode stays"
    assert terminal_safe(text) == text


def test_a_hostile_file_name_in_the_evidence_prints_escaped(tmp_path: Path, qualify: Any) -> None:
    # An evidence folder comes from a download: a stray file's name is quoted in the reason that refuses it.
    ev = make_evidence(tmp_path)
    (ev.evidence_dir / f"note{FORGERY}.txt").write_bytes(b"x")
    decision = tmp_path / "decision.json"
    done = qualify([*ev.verify_argv(), "--json", str(decision)])
    assert done.status == 1
    printed = done.out + done.err
    assert "\\x1b[2K" in printed  # the name was printed, escaped
    assert "\x1b" not in printed
    assert "\r" not in printed
    assert "\u202e" not in printed
    # The JSON decision keeps the exact text: escaping is for the terminal only.
    reasons = json.loads(decision.read_text())["reasons"]
    assert any(FORGERY in reason["message"] for reason in reasons)
