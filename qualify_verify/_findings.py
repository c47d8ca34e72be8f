"""Accumulated reasons: verification reports every problem it can see, not just the first.

Each reason is either a root cause (a fault of its own) or a consequence of an
earlier one: a statement whose signature does not verify also leaves its
platform uncovered, its artifact unmatched and the aggregate's list unequal to
what was verified. A check that knows its finding follows from an earlier one
says so (``follows=``), and :attr:`Findings.reasons` lists every root cause in
the order found, each followed by its consequences, whose ``follows`` is the
index of that root in the list. No consequence is ever shown as an
independent fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from desktop_qualify.evidence_schemas import Code, Platform, QualificationError, Reason


@dataclass
class Findings:
    """The reasons found so far, each a root cause or a consequence of one."""

    _found: list[Reason] = field(default_factory=list)
    # For each reason in _found, the index in _found of the reason it follows from (None for a root cause).
    _parents: list[int | None] = field(default_factory=list)

    def add(self, code: Code, message: str, platform: Platform | None = None, *,
            follows: Reason | None = None) -> Reason:
        """Record a finding; ``follows`` names the earlier finding it is a consequence of."""
        reason = Reason(code=code, message=message[:4000], platform=platform)
        parent = self._root_index(follows)
        for i, (known, known_parent) in enumerate(zip(self._found, self._parents, strict=True)):
            if known == reason:
                # Found again as a root cause: the stronger classification wins.
                if known_parent is not None and parent is None:
                    self._parents[i] = None
                return known
        self._found.append(reason)
        self._parents.append(parent)
        return reason

    def add_error(self, exc: QualificationError, platform: Platform | None = None, *,
                  follows: Reason | None = None) -> Reason:
        """Record a QualificationError as a finding (its code and message)."""
        return self.add(exc.code, exc.message, platform, follows=follows)

    def _root_index(self, follows: Reason | None) -> int | None:
        if follows is None:
            return None
        index = next(i for i, known in enumerate(self._found) if known is follows or known == follows)
        # A consequence of a consequence follows the same root.
        while (parent := self._parents[index]) is not None:
            index = parent
        return index

    @property
    def roots(self) -> list[Reason]:
        """The root causes, in the order found."""
        return [r for r, parent in zip(self._found, self._parents, strict=True) if parent is None]

    @property
    def reasons(self) -> list[Reason]:
        """Root causes in the order found, each followed by the consequences it explains."""
        ordered: list[Reason] = []
        for i, (root, parent) in enumerate(zip(self._found, self._parents, strict=True)):
            if parent is not None:
                continue
            at = len(ordered)
            ordered.append(root)
            ordered += [r.model_copy(update={"cause": "consequence", "follows": at})
                        for r, p in zip(self._found, self._parents, strict=True) if p == i]
        return ordered

    @property
    def ok(self) -> bool:
        """Whether nothing was found."""
        return not self._found
