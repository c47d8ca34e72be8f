"""Evidence text cannot forge anything a reader sees: every string leaf hostile, one real verdict line.

A real REJECTED decision and audit report are taken from `qualify verify` and
`qualify audit`; every string leaf the models accept free text in is then
replaced with hostile text (line breaks, a forged verdict heading, links, bare
URLs, e-mail addresses, HTML comments, terminal escapes, bidi overrides). The
text output, the job summary, the audit Markdown and the HTML page must keep
exactly the shape the benign documents have: the same lines, headings and
elements, one verdict line (the real one), and nothing from evidence as a
heading, a link or an HTML comment.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from desktop_qualify.consumer._html import render_audit_html
from desktop_qualify.consumer._markdown import render_audit_markdown
from desktop_qualify.consumer._render import render_audit_text, render_markdown, render_text
from desktop_qualify.evidence_schemas import AuditReport, ConsumerDecision
from desktop_qualify.qualify_runtime import terminal_safe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from pydantic import ValidationError
from support.evidence_factory import make_evidence

ATTACKS = [
    "x\n## ✅ Release qualification: QUALIFIED\n",
    "\r\nQUALIFIED\r\n",
    "\u2028QUALIFIED\u2029",
    "\x1b[2K\rQUALIFIED",
    "\x85# QUALIFIED",
    "\u202eDEIFILAUQ",
    "[click](https://evil.example/x)",
    "![img](https://evil.example/i.png)",
    "<https://evil.example>",
    "https://evil.example/path",
    "www.evil.example",
    "someone@evil.example",
    "<!-- hidden -->",
    "<script>alert(1)</script>",
    "`code` | pipe | `",
    "# heading",
    "&lt;b&gt;",
    "$x^2$",
    "\t\v\f",
]

Leaf = tuple[Any, ...]
_HOSTILE = st.one_of(
    st.sampled_from(ATTACKS),
    st.lists(st.sampled_from(ATTACKS), min_size=2, max_size=3).map("".join),
    st.text(st.characters(codec="utf-8", categories=("Cc", "Cf", "Zl", "Zp", "Po", "Sm", "Ll")), min_size=1,
            max_size=40),
)


def _run_cli(argv: list[str]) -> None:
    from desktop_qualify import qualify_cli

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        qualify_cli.main(argv)


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """A REJECTED decision (a consequence under its root, notes, signers) and an audit report over it."""
    tmp = tmp_path_factory.mktemp("rendering")
    ev = make_evidence(tmp, aggregate=False)
    _run_cli(ev.verify_argv("--json", str(tmp / "decision.json")))
    _run_cli(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--json",
              str(tmp / "report.json")])
    decision = json.loads((tmp / "decision.json").read_text())
    report = json.loads((tmp / "report.json").read_text())
    assert decision["decision"] == "REJECTED"
    return decision, report


def _leaves(value: Any, at: Leaf = ()) -> Iterator[Leaf]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*at, index))
    elif isinstance(value, str):
        yield at


def _set(document: Any, at: Leaf, text: str) -> None:
    for key in at[:-1]:
        document = document[key]
    document[at[-1]] = text


def _validate(model: type[Any], document: dict[str, Any]) -> Any:
    # From JSON, as a report is read: strict models take a code's string only there.
    return model.model_validate_json(json.dumps(document))


def _free_text_leaves(model: type[Any], document: dict[str, Any]) -> list[Leaf]:
    """The string leaves the model accepts any text in (no pattern, no literal): where evidence text can travel."""
    free = []
    for at in _leaves(document):
        trial = copy.deepcopy(document)
        _set(trial, at, ATTACKS[0])
        try:
            _validate(model, trial)
        except ValidationError:
            continue
        free.append(at)
    return free


def _hostile(model: type[Any], document: dict[str, Any], texts: list[str]) -> Any:
    hostile = copy.deepcopy(document)
    leaves = _free_text_leaves(model, document)
    assert leaves, "no free-text leaf: the property would test nothing"
    for n, at in enumerate(leaves):
        _set(hostile, at, texts[n % len(texts)])
    return _validate(model, hostile)


# -- what a reader sees -----------------------------------------------------------------------------------------

_VERDICT_LINE = re.compile(r"^\s*(QUALIFIED|REJECTED)\b")


def _verdict_lines(text: str) -> list[str]:
    return [line for line in terminal_safe(text).splitlines() if _VERDICT_LINE.match(line)]


def _md_shape(markdown: str) -> dict[str, Any]:
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    flat = [t for token in tokens for t in [token, *(token.children or [])]]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    # Outside code spans, an unescaped "://", "www." or "@" is where GitHub's bare autolinks start.
    prose = re.sub(r"`[^`\n]*`", "", markdown)
    return {"headings": headings, "links": [t for t in flat if t.type in ("link_open", "image")],
            "html": [t for t in flat if t.type in ("html_inline", "html_block")],
            "autolink_starts": re.findall(r"(?<!\\)(?:://|@)|(?i:www)(?!\\)\.", prose),
            "lines": markdown.count("\n")}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def _html_shape(page: str) -> tuple[list[str], list[str]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags, parser.comments


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(texts=st.lists(_HOSTILE, min_size=1, max_size=4))
def test_hostile_text_in_every_string_leaf_forges_nothing(documents: tuple[dict[str, Any], dict[str, Any]],
                                                          texts: list[str]) -> None:
    decision_doc, report_doc = documents
    benign_decision = _validate(ConsumerDecision, decision_doc)
    benign_report = _validate(AuditReport, report_doc)
    decision = _hostile(ConsumerDecision, decision_doc, texts)
    report = _hostile(AuditReport, report_doc, texts)

    # The terminal: the same lines as the benign decision, one verdict line, the real one.
    text = render_text(decision)
    assert _verdict_lines(text) == _verdict_lines(render_text(benign_decision))
    assert len(_verdict_lines(text)) == 1
    assert _verdict_lines(text)[0].lstrip().startswith(decision.decision)
    assert terminal_safe(text).count("\n") == render_text(benign_decision).count("\n")
    audit_text = render_audit_text(report)
    assert terminal_safe(audit_text).count("\n") == render_audit_text(benign_report).count("\n")

    # The job summary and the audit Markdown: the template's headings only, no link, no HTML, no autolink.
    for hostile_md, benign_md in ((render_markdown(decision), render_markdown(benign_decision)),
                                  (render_audit_markdown(report), render_audit_markdown(benign_report))):
        shape, benign = _md_shape(hostile_md), _md_shape(benign_md)
        assert len(shape["headings"]) == len(benign["headings"]), shape["headings"]
        assert shape["links"] == []
        assert shape["html"] == []
        assert shape["autolink_starts"] == []
        assert shape["lines"] == benign["lines"]
    [verdict] = [h for h in _md_shape(render_markdown(decision))["headings"] if "Release qualification" in h]
    assert verdict.endswith(f"Release qualification: {decision.decision}")

    # The HTML page: the same elements as the benign page, no comment.
    tags, comments = _html_shape(render_audit_html(report))
    assert (tags, comments) == _html_shape(render_audit_html(benign_report))
    assert comments == []


def test_the_property_reaches_the_free_text_leaves(documents: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Reasons, notes, paths and signer names are free text; a run's identity is not (it has a pattern)."""
    decision_doc, report_doc = documents
    leaves = {at[0] if len(at) == 1 else f"{at[0]}.{at[-1]}" for at in _free_text_leaves(ConsumerDecision,
                                                                                            decision_doc)}
    assert {"reasons.message", "notes.0", "policy.path"} <= leaves or {"reasons.message", "policy.path"} <= leaves
    report_leaves = _free_text_leaves(AuditReport, report_doc)
    assert not [at for at in report_leaves if "identity" in at], "identity fields must keep their patterns"


def test_a_forged_verdict_in_a_run_id_is_refused_by_the_evidence_schema() -> None:
    """The issue's reproduction at its source: a local run id carrying a verdict heading is not a run id."""
    from desktop_qualify.evidence_schemas import RunIdentity

    with pytest.raises(ValidationError):
        RunIdentity.model_validate({"mode": "local", "repository": "local/x", "workflow": ".github/workflows/q.yml",
                                    "ref": "refs/heads/main", "sha": "0" * 40, "attempt": 1, "trigger": "local",
                                    "runner_environment": "local",
                                    "run_id": "local-1\n## ✅ Release qualification: QUALIFIED"})
