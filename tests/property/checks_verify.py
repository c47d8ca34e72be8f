"""Targets for whole-evidence verification: verify_release, `qualify verify`, and the decision table."""

from __future__ import annotations

import tempfile
import typing
from pathlib import Path
from types import UnionType
from typing import Any, Literal

import pytest
from desktop_qualify.evidence_schemas import PLATFORMS, Code, ConsumerDecision, DecisionRow
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import verify_release

from .cli import expect_cli_contract, run_qualify
from .oracle import expect, refused_or_returned
from .recipes import Built, build, pristine_recipe, recipes
from .target import Target, decode_recipe, encode_recipe

CELL_VALUES = frozenset({"pass", "fail", "missing", "n/a"})


def _why(built: Built) -> str:
    return "; ".join(f"{category}: {why}" for category, why in built.must_reject)


def check_verify(recipe: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        built = build(recipe, Path(tmp))
        evidence = built.evidence
        policy = load_policy(evidence.policy_path)
        verdict, err = refused_or_returned("verify_release", lambda: verify_release(
            policy, [evidence.evidence_dir], built.artifacts, candidate_sha=built.candidate_sha))
        if verdict is None:
            expect(not built.pristine, "verify:pristine-evidence-refused", str(err))
            return
        for reason in verdict.reasons:
            expect(isinstance(reason.code, Code) and (reason.platform is None or reason.platform in PLATFORMS),
                   "verify:reason-without-stable-code", repr(reason))
        verdict.rows()  # the decision table is part of the verdict: building it must not fail either
        if verdict.qualified:
            expect(not verdict.reasons, "verify:qualified-with-reasons", repr(verdict.reasons))
            first = built.must_reject[0][0] if built.must_reject else ""
            expect(not built.must_reject, f"verify:accepted-bad-evidence:{first}", lambda: _why(built))
        else:
            expect(not built.pristine, "verify:pristine-evidence-rejected",
                   lambda: "; ".join(f"{r.code.value}: {r.message}" for r in verdict.reasons))


VERIFY = Target("verify", recipes, check_verify, encode_recipe, decode_recipe, default_examples=50,
                examples=(pristine_recipe(),))


def _decision(target: str, built: Built, tmp: Path) -> ConsumerDecision | None:
    """Run `qualify verify --json`; the decision it wrote, or None when it stopped with exit 2."""
    out = tmp / "decision.json"
    run = run_qualify(built.verify_argv("--json", str(out)))
    expect_cli_contract(target, run)
    if built.pristine:
        expect(run.status == 0, f"{target}:pristine-evidence-not-qualified", run.out + run.err)
    if built.must_reject:
        expect(run.status != 0, f"{target}:accepted-bad-evidence:{built.must_reject[0][0]}", _why(built))
    if run.status == 2:
        return None
    expect(out.is_file(), f"{target}:no-decision-written", run.err[-500:])
    try:
        decision = ConsumerDecision.model_validate_json(out.read_bytes())
    except ValueError as exc:
        raise AssertionError(f"{target}: --json output is not a ConsumerDecision: {exc}") from exc
    expect((run.status == 0) == (decision.decision == "QUALIFIED"), f"{target}:exit-status-disagrees",
           f"exit {run.status}, decision {decision.decision}")
    return decision


def _literal_values(annotation: Any) -> set[Any]:
    if typing.get_origin(annotation) is Literal:
        return set(typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, UnionType):
        return set().union(*(_literal_values(arg) for arg in typing.get_args(annotation) if arg is not type(None)))
    return set()


def cell_columns() -> tuple[str, ...]:
    """The row model's status cells: fields whose values are among pass/fail/missing/n/a."""
    columns = tuple(name for name, info in DecisionRow.model_fields.items()
                    if (values := _literal_values(info.annotation)) and values <= CELL_VALUES)
    assert columns, f"DecisionRow has no status-cell fields: {list(DecisionRow.model_fields)}"
    return columns


def _expect_qualified_is_all_pass(target: str, decision: ConsumerDecision) -> None:
    if decision.decision != "QUALIFIED":
        return
    cells = [(row.platform, column, getattr(row, column)) for row in decision.rows for column in cell_columns()]
    expect(all(value == "pass" for _, _, value in cells) and not decision.reasons,
           f"{target}:qualified-with-failing-cells", repr([c for c in cells if c[2] != "pass"] or decision.reasons))


def check_cli_verify(recipe: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        decision = _decision("cli_verify", build(recipe, Path(tmp)), Path(tmp))
    if decision is not None:
        _expect_qualified_is_all_pass("cli_verify", decision)


CLI_VERIFY = Target("cli_verify", recipes, check_cli_verify, encode_recipe, decode_recipe, default_examples=35,
                    examples=(pristine_recipe(),))


def column_codes() -> dict[str, frozenset[Code]]:
    """qualify_verify.COLUMN_CODES (column -> the codes that can fail it), or a skip until it exists."""
    from desktop_qualify import qualify_verify
    mapping = getattr(qualify_verify, "COLUMN_CODES", None)
    if mapping is None:
        pytest.skip("qualify_verify.COLUMN_CODES does not exist yet (the decision-table contract is being added)")
    return {column: frozenset(Code(code) for code in codes) for column, codes in mapping.items()}


def check_decision_table(recipe: dict[str, Any]) -> None:
    codes = column_codes()
    with tempfile.TemporaryDirectory() as tmp:
        decision = _decision("decision_table", build(recipe, Path(tmp)), Path(tmp))
    if decision is None:
        return
    _expect_qualified_is_all_pass("decision_table", decision)
    for column in cell_columns():
        expect(column in codes, f"decision_table:column-without-codes:{column}", f"COLUMN_CODES has {sorted(codes)}")
        for row in decision.rows:
            if getattr(row, column) != "fail":
                continue
            explained = [r for r in decision.reasons if r.platform == row.platform and r.code in codes[column]]
            expect(bool(explained), f"decision_table:unexplained-fail:{column}",
                   f"{row.platform} {column}=fail, but no reason for {row.platform} has a code in "
                   f"{sorted(c.value for c in codes[column])}; reasons: "
                   + "; ".join(f"{r.code.value}[{r.platform}]" for r in decision.reasons))


DECISION_TABLE = Target("decision_table", recipes, check_decision_table, encode_recipe, decode_recipe,
                        default_examples=35, examples=(pristine_recipe(),))

TARGETS = (VERIFY, CLI_VERIFY, DECISION_TABLE)
