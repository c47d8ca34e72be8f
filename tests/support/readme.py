"""The fenced blocks of the README and of the reference pages under docs/, with the marker before each.

The marker is ``<!-- readme: KIND -->``. Kinds: ``setup`` (the two set-up commands and getting ``qualify`` on PATH),
``runnable`` (runs in a fresh clone after the set-up; tests/e2e runs it against
the local chain's output), ``needs-github`` (needs a GitHub run, release or
token), ``contract`` (the command-line synopsis, not a command), ``after-github-offline``
(runs against ``nox -s qualify-github-offline``'s output; tests/e2e_github runs it), ``after-example``
(runs against ``nox -s qualify-example``'s output; tests/e2e/test_example_chain.py runs it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# The reference pages the README links to; their command blocks carry the same markers.
DOCS = REPO / "docs"
KINDS = frozenset({"setup", "runnable", "needs-github", "contract", "after-github-offline", "after-example"})
_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```\n", re.DOTALL | re.MULTILINE)
_MARKER = re.compile(r"<!-- readme: (?P<kind>[a-z-]+) -->\n\n?$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    kind: str | None
    body: str


def documents() -> list[Path]:
    """The README and every reference page under docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(text: str | None = None, path: Path = README) -> list[Block]:
    """The blocks of ``text`` (of ``path``); with no text, of the README and every page under docs/."""
    if text is None:
        return [b for doc in documents() for b in blocks(doc.read_text(encoding="utf-8"), doc)]
    found = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()]
        marker = _MARKER.search(before[-80:])
        found.append(Block(path, before.count("\n") + 1, match["lang"], marker["kind"] if marker else None,
                           match["body"]))
    return found
