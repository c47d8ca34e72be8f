"""Mutation testing of the trust-critical packages with mutmut, in a scratch copy (docs/mutation.md).

`nox -s mutants [-- PACKAGE ...]` runs ``python tests/mutation/mutants.py run``; tests/mutation/test_mutant_sample.py
runs a fixed-seed sample through the same functions. The checkout is never written: the working tree's files are
copied to a scratch folder whose top-level packages are laid out as the wheel installs them
(``desktop_qualify/<folder>``, pyproject's package-dir), so mutmut's module names are the names the tests import.
mutmut itself does the work (its configuration is pyproject's ``[tool.mutmut]``); this file lays out the copy, gives
mutmut an interpreter whose path finds the mutated copy first (in the test's children too), and writes the report.
Standard library only (the noxfile and pytest both import it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REPORT = HERE / "report.json"
EQUIVALENT = HERE / "equivalent.toml"
TESTS_BY_FUNCTION = HERE / "tests_by_function.json"
PACKAGE = "desktop_qualify"
# mutmut's exit codes as its status names (mutmut.stats.status_by_exit_code, mutmut 3.8).
_STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout",
           37: "caught by type check", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
           -11: "segfault", -9: "segfault", None: "not checked"}
# What counts as killed: mutmut's own verdicts, and a survivor of a run whose new test was run against it and failed
# (NEW_TEST_KILLED, written by the report's author, never by mutmut).
NEW_TEST_KILLED = "killed by a new test"
KILLED = frozenset({"killed", "timeout", "segfault", "caught by type check", NEW_TEST_KILLED})
# The mutmut call that runs in the scratch copy: its click entry point, under the layered interpreter.
_MUTMUT = "import sys; from mutmut.__main__ import cli; sys.exit(cli())"


def package_dirs(checkout: Path = ROOT) -> dict[str, str]:
    """Folder -> installed name (``qualify_verify`` -> ``desktop_qualify.qualify_verify``), from pyproject."""
    data = tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))
    dirs: dict[str, str] = data["tool"]["setuptools"]["package-dir"]
    return {folder: name for name, folder in dirs.items() if folder != PACKAGE}


def copy_tree(checkout: Path, scratch: Path) -> None:
    """The working tree's files (tracked, and untracked but not ignored) into ``scratch``, laid out as installed."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=checkout,
                            capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = checkout / name
        if not source.is_file() or source.is_symlink():
            continue
        target = scratch / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    # The top-level folders stay (tests read them by path); the package gets its own copy to import and mutate.
    for folder, name in package_dirs(checkout).items():
        if (scratch / folder).is_dir():
            shutil.copytree(scratch / folder, scratch / Path(*name.split(".")), dirs_exist_ok=True)
    # mutmut runs the tests from its own copy (scratch/mutants): every other top-level entry goes there too.
    config = scratch / "pyproject.toml"
    entries = sorted(p.name for p in scratch.iterdir() if p.name not in {PACKAGE, "tests", "pyproject.toml"})
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("[tool.mutmut]\n", f"[tool.mutmut]\nalso_copy = {json.dumps(entries)}\n", 1),
                      encoding="utf-8")


def layered_python(scratch: Path) -> Path:
    """A venv in ``scratch`` whose path is: the mutated copy, then this interpreter's site-packages.

    The site-packages folder is on the path as a plain entry, so its ``.pth`` files (an editable install of the
    checkout among them) are not read: ``desktop_qualify`` comes from ``scratch/mutants`` alone, in every child
    process the tests start with this interpreter.
    """
    venv = scratch / ".venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    lines = [str(scratch / "mutants"), *sorted(ours)]
    (Path(purelib) / "desktop_qualify_mutants.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python


def prepare(scratch: Path, checkout: Path = ROOT) -> Path:
    """A fresh scratch copy of ``checkout`` and its interpreter; returns the interpreter."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    copy_tree(checkout, scratch)
    # The Sigstore tests read the vectors beside the checkout (../shared/vectors) and skip without them; mutmut
    # runs the tests in scratch/mutants, so the vectors' folder is linked beside that tree as it is beside the checkout.
    shared = checkout.resolve().parent / "shared"
    if shared.is_dir():
        (scratch / "shared").symlink_to(shared, target_is_directory=True)
    return layered_python(scratch)


_SELECTION = "pytest_add_cli_args_test_selection = "


def select_tests(scratch: Path, tests: Sequence[str]) -> None:
    """Run only ``tests`` (files or folders) against the mutants, in place of the configured fast set.

    A narrower set makes a module whose functions most of the fast set reaches affordable: a mutant it kills is
    killed by the fast set too (the killing test is in it). Its survivors are then run again against the whole fast
    set (``--rerun`` without ``--tests``) or given a test of their own before the report counts them.
    """
    config = scratch / "pyproject.toml"
    lines = config.read_text(encoding="utf-8").splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith(_SELECTION)]
    if len(at) != 1:
        raise SystemExit(f"mutants: pyproject.toml holds {len(at)} '{_SELECTION.strip()}' lines, not one")
    lines[at[0]] = _SELECTION + json.dumps(list(tests)) + "\n"
    config.write_text("".join(lines), encoding="utf-8")


def patterns_for(packages: Sequence[str]) -> list[str]:
    """``qualify_trust`` or ``consumer._anchor`` -> mutmut's name pattern (none: every mutant configured)."""
    return [f"{PACKAGE}.{package.removeprefix(PACKAGE + '.')}.*" for package in packages]


# A mutant can make a copy loop endless (a test's fake reader that never ran dry under read(None) once filled 75 GB of
# /tmp): no file mutmut's tests write may grow past this. The write past it fails (SIGXFSZ), so the mutant is killed.
# It stays above the policy's default candidate cap (8 GiB): a unit test truncates a sparse file just past that cap,
# and the cap counts a sparse file's length, not its blocks.
FILE_SIZE_CAP = 16 << 30


def _cap_file_size() -> None:
    """Runs in the child before mutmut starts (POSIX): the cap holds for mutmut, its workers and their tests."""
    import resource  # POSIX only: imported here so the module still loads elsewhere

    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    cap = FILE_SIZE_CAP if hard == resource.RLIM_INFINITY else min(FILE_SIZE_CAP, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, hard))


def mutmut(python: Path, scratch: Path, *args: str, env: dict[str, str] | None = None) -> int:
    """``mutmut ARGS`` in the scratch copy, at low priority (`nice -n 10`), one worker unless ARGS say otherwise."""
    prefix = ["nice", "-n", "10"] if shutil.which("nice") else []
    run_env = {**os.environ, **(env or {})}
    run_env.pop("PYTHONPATH", None)
    limit = _cap_file_size if os.name == "posix" else None
    return subprocess.run([*prefix, str(python), "-c", _MUTMUT, *args], cwd=scratch, env=run_env,
                          check=False, preexec_fn=limit).returncode


def generate(python: Path, scratch: Path) -> None:
    """Only mutmut's mutant generation (the first step of ``mutmut run``): names to sample from, no test run."""
    code = ("from mutmut.__main__ import create_mutants; "
            "from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir; "
            "copy_src_dir(); copy_also_copy_files(); create_mutants(1)")
    subprocess.run([str(python), "-c", code], cwd=scratch, check=True, capture_output=True)


def results(scratch: Path) -> dict[str, str]:
    """Every mutant's name and status, from mutmut's ``.meta`` files in the scratch copy."""
    found: dict[str, str] = {}
    for meta in sorted((scratch / "mutants" / PACKAGE).rglob("*.py.meta")):
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for name, code in codes.items():
            found[name] = _STATUS.get(code, "suspicious")
    return found


def package_of(name: str) -> str:
    """A mutant's module, its report row: ``desktop_qualify.consumer._anchor.x_f__mutmut_3`` -> ``consumer._anchor``."""
    parts = name.removeprefix(PACKAGE + ".").split(".")
    return ".".join(part for part in parts if not part.startswith(("x_", "xǁ")))


def equivalents(path: Path = EQUIVALENT) -> dict[str, str]:
    """Mutant name -> the one-line reason it is equivalent (tests/mutation/equivalent.toml)."""
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {name: str(reason) for name, reason in data.get("equivalent", {}).items()}


def summarize(found: dict[str, str], equivalent: dict[str, str]) -> dict[str, dict[str, object]]:
    """Per package: counts, score (killed / (measured - equivalent)), and every survivor with its standing."""
    packages: dict[str, dict[str, object]] = {}
    by_package: dict[str, list[tuple[str, str]]] = {}
    for name, status in sorted(found.items()):
        by_package.setdefault(package_of(name), []).append((name, status))
    for package, rows in sorted(by_package.items()):
        measured = [(n, s) for n, s in rows if s != "not checked"]
        if not measured:
            continue
        counts = Counter(s for _, s in measured)
        survivors = [n for n, s in measured if s in {"survived", "no tests", "suspicious"}]
        equivalent_here = [n for n in survivors if n in equivalent]
        open_survivors = [n for n in survivors if n not in equivalent]
        killed = [n for n, s in measured if s in KILLED]
        denominator = len(measured) - len(equivalent_here)
        packages[package] = {
            "mutants": len(rows), "measured": len(measured), "counts": dict(sorted(counts.items())),
            "killed": len(killed), "equivalent": len(equivalent_here),
            "score": round(len(killed) / denominator, 4) if denominator else 1.0,
            "surviving": open_survivors, "equivalent_mutants": {n: equivalent[n] for n in equivalent_here},
            "killed_mutants": killed,
        }
    return packages


def merge_report(update: dict[str, dict[str, object]], *, commit: str, date: str, path: Path = REPORT) -> None:
    """Write ``update``'s packages into the committed report, keeping the packages this run did not measure."""
    report = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"packages": {}}
    for package, row in update.items():
        report["packages"][package] = {**row, "commit": commit, "date": date}
    report["tool"] = "mutmut 3.8.1"
    path.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def record_tests_by_function(scratch: Path, packages: Iterable[str], path: Path = TESTS_BY_FUNCTION) -> None:
    """Record, per mutated function of ``packages``, the test files that reached it (mutmut's stats), for the sample."""
    stats = json.loads((scratch / "mutants" / "mutmut-stats.json").read_text(encoding="utf-8"))
    wanted = set(packages)
    known: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    known = {name: files for name, files in known.items() if package_of(name) not in wanted}
    for name, tests in stats["tests_by_mangled_function_name"].items():
        if package_of(name) in wanted:
            known[name] = sorted({test.partition("::")[0] for test in tests})
    path.write_text(json.dumps(known, indent=0, sort_keys=True) + "\n", encoding="utf-8")


def sample(names: Iterable[str], size: int, seed: int) -> list[str]:
    """``size`` names drawn with ``seed`` from ``names`` (sorted first, so the draw depends on the names alone)."""
    pool = sorted(names)
    return sorted(random.Random(seed).sample(  # noqa: S311 (a reproducible draw, not a secret)
        pool, min(size, len(pool))))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    """``run [PACKAGE ...] --scratch DIR``: mutmut over the packages in a scratch copy, then the report."""
    parser = argparse.ArgumentParser(prog="mutants")
    parser.add_argument("packages", nargs="*", help="e.g. qualify_trust, consumer._anchor (default: every one)")
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--no-report", action="store_true", help="print the figures without writing the report")
    parser.add_argument("--rerun", type=Path, metavar="JSON",
                        help="run only the mutants this earlier results file lists as surviving (a name -> status "
                             "map, as --results writes); the others keep their status from it")
    parser.add_argument("--results", type=Path, metavar="JSON", help="also write every mutant's status here")
    parser.add_argument("--tests", action="append", metavar="PATH",
                        help="run this test file or folder against each mutant instead of the fast set (repeatable)")
    parser.add_argument("--max-children", type=int, default=1, help="mutmut's workers (default 1)")
    args = parser.parse_args(argv)
    if args.max_children < 1:
        parser.error(f"--max-children {args.max_children}: mutmut needs at least one worker")
    python = prepare(args.scratch)
    if args.tests:
        select_tests(args.scratch, args.tests)
    earlier: dict[str, str] = json.loads(args.rerun.read_text(encoding="utf-8")) if args.rerun else {}
    again = sorted(n for n, s in earlier.items() if s in {"survived", "no tests", "suspicious"})
    code = mutmut(python, args.scratch, "run", "--max-children", str(args.max_children),
                  *(again or patterns_for(args.packages)))
    found = results(args.scratch)
    if earlier:
        found = {**earlier, **{n: s for n, s in results(args.scratch).items() if n in again}}
    if args.results:
        args.results.write_text(json.dumps(found, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    wanted = {p.removeprefix(PACKAGE + ".") for p in args.packages}
    if wanted:
        found = {n: s for n, s in found.items() if any(f"{package_of(n)}.".startswith(f"{w}.") for w in wanted)}
    summary = summarize(found, equivalents())
    for package, row in summary.items():
        print(f"{package:<28} score {row['score']:.2%}  killed {row['killed']}/{row['measured']}  "
              f"equivalent {row['equivalent']}  surviving {len(row['surviving'])}")  # type: ignore[arg-type]
    if not args.no_report:
        dirty = " (with uncommitted changes)" if _git("status", "--porcelain") else ""
        merge_report(summary, commit=_git("rev-parse", "HEAD") + dirty, date=time.strftime("%Y-%m-%d", time.gmtime()))
        record_tests_by_function(args.scratch, summary)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
