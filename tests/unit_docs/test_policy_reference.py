"""docs/policy.md's field reference is the policy models' own: regenerated here, it must equal the page.

Every field of every section carries a docstring (its meaning in the reference); the block between the
markers is ``render_policy_reference()``, regenerated with
``python -m desktop_qualify.qualify_policy reference --out docs/policy.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from desktop_qualify.qualify_policy import PolicyFile, render_policy_reference, undocumented_fields
from desktop_qualify.qualify_policy.__main__ import main
from desktop_qualify.qualify_policy._reference import BEGIN, END, replace_generated_block

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "policy.md"
REGENERATE = "python -m desktop_qualify.qualify_policy reference --out docs/policy.md"


def test_every_policy_field_has_a_docstring() -> None:
    missing = undocumented_fields()
    assert not missing, f"policy fields without a docstring (the string under the field): {missing}"


def test_the_page_holds_the_reference_the_models_render() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page.count(BEGIN) == 1, "docs/policy.md lost its generated-block markers"
    assert page.count(END) == 1, "docs/policy.md lost its generated-block markers"
    assert replace_generated_block(page, render_policy_reference()) == page, \
        f"docs/policy.md's field reference differs from the policy models; run: {REGENERATE}"


def test_the_page_says_how_to_regenerate_it() -> None:
    intro = PAGE.read_text(encoding="utf-8").split(BEGIN)[0]
    assert REGENERATE in intro


def test_every_section_of_the_policy_file_has_a_heading() -> None:
    headings = set(re.findall(r"^### `\[([^\]]+)\]`", render_policy_reference(), flags=re.M))
    expected = {"producer", "producer.signers", "producer.builder", "trust", "verifier", "source", "app", "app.build",
                "app.build.outputs", "app.install", "app.install.<platform>", "app.probe", "app.journey",
                "app.display", "app.state", "app.codes", "platforms", "journey", "journey.steps.<name>",
                "journey.steps.<name>.layer", "isolation", "confinement", "signing", "limits", "reproducible",
                "update", "update.downgrade"}
    assert headings == expected
    assert {*PolicyFile.model_fields} - {"version", "name"} <= headings


def test_every_field_is_a_row_with_its_type_default_and_meaning() -> None:
    text = render_policy_reference()
    assert "| `version` | `2` | required |" in text
    assert re.search(r"^\| `network` \| list \(at most 6 items\) of .* \| `\[\"build\"\]` \| The app stages", text,
                     flags=re.M)
    assert re.search(r"^\| `verifier_key` \| string \(1 to 512 characters\) \| absent \| ", text, flags=re.M)
    assert "| `pattern` | string (2 to 200 characters) | `\"^[A-Z][A-Z0-9_]{2,64}$\"` |" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert all(not line.endswith("|  |") for line in rows), "a row without a meaning"


def test_a_field_without_a_docstring_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_qualify.qualify_policy import _reference

    real = _reference.attribute_docstrings

    def without_one(model: type) -> dict[str, str]:
        docs = dict(real(model))  # type: ignore[arg-type]
        docs.pop("build_timeout_seconds", None)
        return docs

    monkeypatch.setattr(_reference, "attribute_docstrings", without_one)
    assert _reference.undocumented_fields() == ["limits.build_timeout_seconds"]


def test_the_command_writes_and_checks_the_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "policy.md"
    page.write_text(f"# Policy\n\nhand-written\n\n{BEGIN}\nstale\n{END}\n\nafter\n", encoding="utf-8")
    assert main(["reference", "--out", str(page), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["reference", "--out", str(page)]) == 0
    written = page.read_text(encoding="utf-8")
    assert written.startswith("# Policy\n\nhand-written\n\n")
    assert written.endswith(f"{END}\n\nafter\n")
    assert "stale" not in written
    assert render_policy_reference().rstrip("\n") in written
    assert main(["reference", "--out", str(page), "--check"]) == 0


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        replace_generated_block("# Policy\n", "block")
