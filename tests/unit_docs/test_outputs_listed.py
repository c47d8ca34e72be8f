"""Every folder `qualify produce --out` and `nox -s qualify` leave behind is named where a reader looks for it.

`OUT/work/` (the build and install work folders, some 100 MB) is no evidence, but it is on disk after every
run: the README's set-up paragraph and docs/cli.md say what it holds and that the next run removes it.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _paragraph_naming(text: str, needle: str) -> str:
    """The blank-line separated paragraph that names ``needle`` (one line), or ''."""
    for paragraph in re.split(r"\n\s*\n", text):
        if needle in paragraph:
            return " ".join(paragraph.split())
    return ""


def test_the_readme_lists_every_output_of_nox_qualify_with_the_work_folder() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    setup = _paragraph_naming(readme, "`nox -s qualify` creates this machine's keys")
    for output in ("evidence/", "artifacts/", "records/", "work/", "decision.json", "summary.md"):
        assert f"`qualification-out/{output}`" in setup, output
    assert "the next run removes" in setup


def test_the_cli_reference_names_the_four_folders_of_produce_out() -> None:
    cli = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    produce = _paragraph_naming(cli, "`qualify produce --out OUT` writes")
    for folder in ("evidence/", "artifacts/", "records/PLATFORM/", "work/PLATFORM/"):
        assert f"`OUT/{folder}`" in produce, folder
    assert "removed by the next" in produce
