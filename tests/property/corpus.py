"""Saved inputs: one JSON file per case under ``tests/corpus_fuzz/cases/``.

A case holds ``target`` (a name in ``targets.TARGETS``), the input as that
target's ``encode`` writes it (``input_b64`` for byte targets, ``recipe`` for
evidence recipes, plus any parameters), ``found`` (an ISO date) and ``note``.
The fuzz session adds ``signature`` (what failed, stable across runs) and
``traceback``. A person triaging a case that stays unfixed adds ``xfail`` (the
reason): the replay is then a strict xfail, and the property runs treat that
signature as known instead of failing on it again.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).resolve().parents[1] / "corpus_fuzz" / "cases"
REQUIRED_FIELDS = frozenset({"target", "found", "note"})


@dataclass(frozen=True)
class Case:
    path: Path
    data: dict[str, Any]

    @property
    def target(self) -> str:
        return str(self.data["target"])

    @property
    def xfail(self) -> str | None:
        reason = self.data.get("xfail")
        return str(reason) if reason else None

    @property
    def signature(self) -> str | None:
        value = self.data.get("signature")
        return str(value) if value else None


def load_cases(directory: Path = CASES_DIR) -> list[Case]:
    return [Case(path, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(directory.glob("*.json"))]


def known_bug_signatures(directory: Path = CASES_DIR) -> frozenset[str]:
    """Signatures of saved cases marked xfail: bugs already reported and tracked by their replay."""
    return frozenset(case.signature for case in load_cases(directory) if case.xfail and case.signature)


def save_case(target: str, fields: dict[str, Any], *, signature: str, note: str, traceback: str,
              directory: Path = CASES_DIR) -> Path:
    """Write a new case; the name is content-addressed, so finding the same input twice writes one file."""
    body = json.dumps(fields, sort_keys=True).encode()
    path = directory / f"{target}-{hashlib.sha256(body).hexdigest()[:12]}.json"
    case = {"target": target, **fields, "found": _dt.date.today().isoformat(), "note": note[:1000],
            "signature": signature, "traceback": traceback[-6000:]}
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(case, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    return path
