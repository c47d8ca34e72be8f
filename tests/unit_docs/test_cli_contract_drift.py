"""The command-line contract (docs/cli.md) and the parsers' --help are one contract: drift fails, both ways.

The block marked ``<!-- readme: contract -->`` lists every command. For each,
the options it names must be exactly the parser's (besides -h/--help), and an
option outside brackets and groups must be exactly a required one. Every
option and every subcommand has help text. One repetition rule holds too: an
option is repeatable in the parser (``append``/``extend``) exactly when the
block marks it ``...`` (``[--evidence DIR]...``), and every other option given
twice exits 2 naming it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from desktop_qualify.qualify_runtime._cli import repeatable

from desktop_qualify import qualify_cli, qualify_sigstore_conformance

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_OPTION = re.compile(r"--[a-z][a-z-]*")
_BLOCK = re.compile(r"<!-- readme: contract -->\n```text\n(.*?)```", re.DOTALL)


def _contract_lines() -> dict[tuple[str, ...], str]:
    """Command (program, subcommand) -> its line in the contract block."""
    match = _BLOCK.search(CONTRACT.read_text(encoding="utf-8"))
    assert match, "docs/cli.md has no block marked <!-- readme: contract -->"
    return {tuple(w for w in line.split()[:2] if not w.startswith("-")): line
            for line in match.group(1).splitlines() if line.split()}


def _repeatable_in_contract(line: str) -> set[str]:
    """The options of a contract line marked repeatable: in a bracket or group followed at once by ``...``."""
    marked: set[str] = set()
    groups: list[set[str]] = [set()]
    i = 0
    while i < len(line):
        char = line[i]
        if char in "[(":
            groups.append(set())
        elif char in "])":
            inner = groups.pop()
            groups[-1] |= inner
            if line.startswith("...", i + 1):
                marked |= inner
        elif (found := _OPTION.match(line, i)) and (i == 0 or line[i - 1] in " [(|"):
            groups[-1].add(found.group())
            i = found.end()
            continue
        i += 1
    return marked


def _contract() -> dict[tuple[str, ...], dict[str, bool]]:
    """Command (program, subcommand) -> {option: required} as docs/cli.md writes it."""
    match = _BLOCK.search(CONTRACT.read_text(encoding="utf-8"))
    assert match, "docs/cli.md has no block marked <!-- readme: contract -->"
    commands: dict[tuple[str, ...], dict[str, bool]] = {}
    for line in match.group(1).splitlines():
        words = line.split()
        if not words:
            continue
        command = tuple(w for w in words[:2] if not w.startswith("-"))
        assert command not in commands, f"the contract lists {' '.join(command)} twice"
        options: dict[str, bool] = {}
        depth = 0
        i = 0
        while i < len(line):
            char = line[i]
            if char in "[(":
                depth += 1
            elif char in "])":
                depth -= 1
            elif (found := _OPTION.match(line, i)) and (i == 0 or line[i - 1] in " [(|"):
                # An option repeated in the line ("--evidence DIR [--evidence DIR]...") is required if any is.
                options[found.group()] = options.get(found.group(), False) or depth == 0
                i = found.end()
                continue
            i += 1
        commands[command] = options
    return commands


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> dict[str, bool]:
    return {name: action.required for action in parser._actions if not isinstance(action, argparse._HelpAction)
            for name in action.option_strings if name.startswith("--")}


def _parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    for program, parser in (("qualify", qualify_cli.build_parser()),
                            ("qualify-sigstore-conformance", qualify_sigstore_conformance.build_parser())):
        found[(program,)] = parser
        for name, sub in _subparsers(parser).items():
            found[(program, name)] = sub
    return found


def test_every_command_in_the_readme_exists_and_every_command_is_in_the_readme() -> None:
    contract = set(_contract())
    parsers = {command for command, parser in _parsers().items() if _options(parser) or not _subparsers(parser)}
    assert contract - parsers == set(), "docs/cli.md lists commands the CLI does not have"
    assert parsers - contract == set(), "the CLI has commands the contract (docs/cli.md) does not list"


@pytest.mark.parametrize("command", sorted(_parsers()), ids=" ".join)
def test_readme_and_help_name_the_same_options_with_the_same_requiredness(command: tuple[str, ...]) -> None:
    parser = _parsers()[command]
    options = _options(parser)
    written = _contract().get(command)
    if written is None:
        assert not options, f"{' '.join(command)} has options but no line in docs/cli.md"
        return
    assert sorted(set(written) - set(options)) == [], "docs/cli.md names options --help does not have"
    assert sorted(set(options) - set(written)) == [], "--help has options docs/cli.md does not name"
    if len(command) == 1:
        return  # The program's own flags (--version) are optional by nature.
    assert {o for o, required in written.items() if required} == {o for o, required in options.items() if required}


@pytest.mark.parametrize("command", sorted(_parsers()), ids=" ".join)
def test_every_option_and_subcommand_has_help_text(command: tuple[str, ...]) -> None:
    parser = _parsers()[command]
    silent = [action.dest for action in parser._actions
              if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()]
    assert silent == []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert [c.dest for c in action._choices_actions if not (c.help or "").strip()] == []


@pytest.mark.parametrize("command", [["--help"], ["verify", "--help"], ["audit", "--help"], ["keygen", "--help"]])
def test_help_runs_and_says_summary_appends(command: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *command], capture_output=True,
                          text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    if command[0] == "verify":
        assert "append GitHub job-summary Markdown" in " ".join(done.stdout.split())


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {action.option_strings[-1]: action for action in parser._actions
            if action.option_strings and not isinstance(action, argparse._HelpAction)
            and action.option_strings[-1].startswith("--")}


@pytest.mark.parametrize("command", sorted(c for c in _parsers() if len(c) > 1), ids=" ".join)
def test_an_option_is_repeatable_exactly_when_the_contract_marks_it(command: tuple[str, ...]) -> None:
    parser = _parsers()[command]
    marked = _repeatable_in_contract(_contract_lines()[command])
    in_parser = {name for name, action in _actions(parser).items() if repeatable(action)}
    assert sorted(marked - in_parser) == [], "docs/cli.md marks options ... that the parser keeps once"
    assert sorted(in_parser - marked) == [], "the parser repeats options docs/cli.md does not mark ..."


def _one_value(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(next(iter(action.choices)))]
    return ["x"]


def _single_value_cases() -> list[tuple[tuple[str, ...], str]]:
    return [(command, name) for command, parser in sorted(_parsers().items()) if len(command) > 1
            for name, action in sorted(_actions(parser).items())
            if not repeatable(action) and not isinstance(action, argparse._VersionAction)]


@pytest.mark.parametrize(("command", "option"), _single_value_cases(), ids=lambda v: " ".join(v) if
                         isinstance(v, tuple) else v)
def test_a_single_value_option_given_twice_exits_2_naming_it(command: tuple[str, ...], option: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    program, sub = command
    parser = qualify_cli.build_parser() if program == "qualify" else qualify_sigstore_conformance.build_parser()
    action = _actions(_parsers()[command])[option]
    once = [option, *_one_value(action)]
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([sub, *once, *once])
    assert exited.value.code == 2
    assert f"QE_USAGE: {option} given twice" in capsys.readouterr().err
