"""The README's fenced blocks with the marker before each: ``<!-- readme: KIND -->``.

Kinds: ``setup`` (the two set-up commands and getting ``qualify`` on PATH),
``runnable`` (runs in a fresh clone after the set-up; tests/e2e runs it against
the local chain's output), ``needs-github`` (needs a GitHub run, release or
token), ``contract`` (the command-line synopsis, not a command), ``after-github-offline``
(runs against ``nox -s qualify-github-offline``'s output, which the suite does not make).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
KINDS = frozenset({"setup", "runnable", "needs-github", "contract", "after-github-offline"})
_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```\n", re.DOTALL | re.MULTILINE)
_MARKER = re.compile(r"<!-- readme: (?P<kind>[a-z-]+) -->\n\n?$")


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    kind: str | None
    body: str


def blocks(text: str | None = None) -> list[Block]:
    text = README.read_text(encoding="utf-8") if text is None else text
    found = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()]
        marker = _MARKER.search(before[-80:])
        found.append(Block(before.count("\n") + 1, match["lang"], marker["kind"] if marker else None, match["body"]))
    return found
