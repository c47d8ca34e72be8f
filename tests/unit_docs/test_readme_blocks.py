"""Every command block of the README and of docs/ runs in a fresh clone or says what it needs (issue 9).

This file checks the markers; tests/e2e/test_readme_recipes.py runs the
runnable blocks against the local chain's output, tests/e2e/test_example_chain.py
the example app's, tests/e2e_github the GitHub-offline chain's.
"""

from __future__ import annotations

import re

from support.readme import KINDS, README, blocks, documents

_COMMAND_LANGS = {"sh", "bash", "shell", "console"}
# What a set-up block may do: the two nox sessions, the example app's chain, and getting `qualify` on PATH.
_SETUP_LINE = re.compile(r"^(#.*|python3 -m pip install nox && nox -s (qualify|tests)|nox -s qualify-example|"
                         r"export PATH=\S+|"
                         r"python3 -m venv \.venv && \.venv/bin/pip install \. && export PATH=\S+)$")


def test_every_block_has_a_language_and_every_command_block_a_marker() -> None:
    found = blocks()
    assert found, "no fenced blocks found in the README"
    assert [b.line for b in found if not b.lang] == [], "a fenced block without a language tag"
    unmarked = [(b.path.name, b.line) for b in found if b.lang in _COMMAND_LANGS and b.kind not in KINDS - {"contract"}]
    assert unmarked == [], "command blocks without <!-- readme: setup|runnable|needs-github|after-... -->"
    assert [b.line for b in found if b.kind == "contract" and b.lang != "text"] == []
    assert [b.line for b in found if b.kind is not None and b.kind not in KINDS] == []


def test_there_are_runnable_recipes_and_github_ones_say_why() -> None:
    found = blocks()
    assert sum(b.kind == "runnable" and b.path == README for b in found) >= 3
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
    for doc in documents():
        assert "shared/" not in doc.read_text(encoding="utf-8"), doc


def test_the_readme_starts_with_set_up_and_recipes_and_links_every_reference_page() -> None:
    text = README.read_text(encoding="utf-8")
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["Set-up: the two commands", "Recipes"], headings
    assert len(text.splitlines()) <= 300, "reference material belongs under docs/, linked from the README"
    pages = {doc.name for doc in documents() if doc != README and doc.name != "README.md"}
    assert {page for page in pages if f"(docs/{page})" not in text} == set(), "a reference page the README omits"


def test_every_recipe_the_issue_names_is_there() -> None:
    bodies = [b.body for b in blocks() if b.path == README and b.kind in {"runnable", "after-example",
                                                                           "after-github-offline"}]
    for command in ("qualify verify", "--html", "qualify bundle", "--bundle", "qualification-out-github",
                    "examples/qt-notes/policy.toml"):
        assert any(command in body for body in bodies), command
