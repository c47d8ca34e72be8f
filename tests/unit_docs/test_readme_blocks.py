"""Every command block of the README runs in a fresh clone or says it needs GitHub (issue 9).

This file checks the markers; tests/e2e/test_readme_recipes.py runs the
runnable blocks against the local chain's output.
"""

from __future__ import annotations

import re

from support.readme import KINDS, README, blocks

_COMMAND_LANGS = {"sh", "bash", "shell", "console"}
# What a set-up block may do: the two nox sessions, and getting `qualify` on PATH.
_SETUP_LINE = re.compile(r"^(#.*|python3 -m pip install nox && nox -s (qualify|tests)|export PATH=\S+|"
                         r"python3 -m venv \.venv && \.venv/bin/pip install \. && export PATH=\S+)$")


def test_every_block_has_a_language_and_every_command_block_a_marker() -> None:
    found = blocks()
    assert found, "no fenced blocks found in the README"
    assert [b.line for b in found if not b.lang] == [], "a fenced block without a language tag"
    unmarked = [b.line for b in found if b.lang in _COMMAND_LANGS and b.kind not in KINDS - {"contract"}]
    assert unmarked == [], "command blocks without <!-- readme: setup|runnable|needs-github -->"
    assert [b.line for b in found if b.kind == "contract" and b.lang != "text"] == []
    assert [b.line for b in found if b.kind is not None and b.kind not in KINDS] == []


def test_there_are_runnable_recipes_and_github_ones_say_why() -> None:
    found = blocks()
    assert sum(b.kind == "runnable" for b in found) >= 2
    for block in found:
        if block.kind == "needs-github":
            assert "gh " in block.body or "$GITHUB_" in block.body, block.line


def test_github_offline_recipes_use_the_policy_kept_beside_the_evidence() -> None:
    found = [b for b in blocks() if b.kind == "after-github-offline"]
    assert found
    for block in found:
        assert "qualification-out-github/policies/release-test.toml" in block.body, block.line
        assert "qualification-out-github/evidence" in block.body, block.line


def test_setup_blocks_hold_only_the_set_up() -> None:
    for block in blocks():
        if block.kind == "setup":
            lines = [line.strip() for line in block.body.splitlines() if line.strip()]
            assert [line for line in lines if not _SETUP_LINE.match(line)] == [], block.line


def test_the_readme_mentions_nothing_outside_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    assert "../" not in text
    assert "shared/" not in text
