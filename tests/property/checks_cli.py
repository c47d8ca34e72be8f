"""Targets that drive `qualify` in-process: mutated policies against good evidence, and odd command lines."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import QualificationError
from desktop_qualify.qualify_policy import load_policy
from hypothesis import strategies as st
from support.evidence_factory import DEFAULT_SHA, make_evidence

from .baselines import evidence_baseline
from .checks_policy import mutate_policy, policy_recipes
from .cli import expect_cli_contract, run_qualify
from .oracle import expect
from .target import Target, decode_recipe, encode_recipe


def check_cli_policy(recipe: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        evidence = make_evidence(Path(tmp))
        base = evidence.policy_path.read_bytes()
        evidence.policy_path.write_bytes(mutate_policy(base, recipe))
        run = run_qualify(evidence.verify_argv())
        expect_cli_contract("cli_policy", run)
        if evidence.policy_path.read_bytes() == base:
            expect(run.status == 0, "cli_policy:untouched-policy-not-qualified", run.out + run.err)
        try:
            load_policy(evidence.policy_path)
        except QualificationError:
            expect(run.status == 2, "cli_policy:invalid-policy-not-exit-2", run.err[-500:])


CLI_POLICY = Target("cli_policy", lambda: policy_recipes(evidence_baseline().policy), check_cli_policy,
                    encode_recipe, decode_recipe, default_examples=35, examples=({"bytes": []},))

# -- odd command lines --------------------------------------------------------------------------------------

# Names of things an argument can point at, made fresh in each example's folder. No NUL bytes: a real
# command line cannot carry one. A name that is not UTF-8 can: Python hands it over surrogate-escaped.
PLACES = ("policy", "evidence", "artifact", "junk", "empty-dir", "missing", "not-utf8", "under-a-file", "long",
          "out-dir", "sha", "garbage-sha")
OPTIONS = ("--policy", "--evidence", "--artifact", "--sha", "--json", "--summary", "--html", "--out")
STRAYS = ("--", "--unknown", "-x", "", "extra", "--policy=", "--evidence")


def command_lines() -> st.SearchStrategy[dict[str, Any]]:
    argument = st.one_of(st.tuples(st.sampled_from(OPTIONS), st.sampled_from(PLACES)).map(list),
                         st.sampled_from(STRAYS).map(lambda s: [s]))
    return st.fixed_dictionaries({"command": st.sampled_from(["verify", "audit", "aggregate"]),
                                  "args": st.lists(argument, max_size=8)})


def _places(root: Path) -> dict[str, str]:
    evidence = make_evidence(root)
    junk = root / "junk.bin"
    junk.write_bytes(b"\x00\xff not a policy, not evidence")
    (root / "empty").mkdir()
    (root / "out").mkdir()
    odd = root / os.fsdecode(b"odd-\xff-name")
    odd.write_bytes(b"x")
    return {"policy": str(evidence.policy_path), "evidence": str(evidence.evidence_dir),
            "artifact": str(evidence.artifact_paths[0]), "junk": str(junk), "empty-dir": str(root / "empty"),
            "missing": str(root / "missing.toml"), "not-utf8": str(odd), "under-a-file": str(junk / "child"),
            "long": str(root / ("n" * 300)), "out-dir": str(root / "out"), "sha": DEFAULT_SHA,
            "garbage-sha": "HEAD~1"}


def check_cli_args(value: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        places = _places(Path(tmp))
        argv = [value["command"]] + [places.get(token, token) if i else token
                                     for arg in value["args"] for i, token in enumerate(arg)]
        run = run_qualify(argv)
    expect_cli_contract("cli_args", run)


CLI_ARGS = Target("cli_args", command_lines, check_cli_args, lambda v: {"command_line": v}, lambda f: f["command_line"],
                  default_examples=40)

TARGETS = (CLI_POLICY, CLI_ARGS)
