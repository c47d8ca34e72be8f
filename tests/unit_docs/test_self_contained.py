"""Nothing in the project points outside it: a reader of a clone or an installed copy can open what is cited.

The design is ``docs/design.md`` (cited as ``docs/design.md §N.M``); the brief
the project was first built from, the style notes and the workspace it was
written in are not part of the repository, so no code, comment, policy,
workflow or document may cite them. Tests may *read* the shared Sigstore test
vectors beside the repository (``../shared/vectors``, skipped where absent);
that one read is allowed under ``tests/`` and nowhere else. Every relative
Markdown link must land on a file of the repository, an anchor on a heading of
it, and every design citation on a section that exists.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "docs" / "design.md"

# Each pattern names a file or place outside the repository (spelled so that this file does not match itself).
OUTSIDE = {
    "the design brief": re.compile(r"\bDESIGN\.md\b"),
    "the style notes": re.compile(r"\bSTYLE\.md\b"),
    "the brief's source documents": re.compile(r"\bseeds?/|\bseed (?:§|0\d\d)"),
    "the shared folder beside the repository": re.compile(r"(?:\.\./|/tmp/)shared\b"),
    "a workspace path": re.compile(r"(?<![\w.-])/" + r"work/"),
}
# Under tests/ only: the shared Sigstore vectors are read (and said to be missing) there.
VECTOR_READ = re.compile(r"\.\./shared/vectors\b")
CITATION = re.compile(r"docs/design\.md[ \t\n#]*((?:§\d+(?:\.\d+)?(?:,\s*)?)+)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SKIPPED_SUFFIXES = {".png", ".jpg", ".gif", ".ico", ".pem", ".der", ".gz", ".zip", ".whl"}


def project_files(root: Path = REPO) -> list[Path]:
    """The files of the repository: tracked or new, not ignored (without git: the tree minus caches, local state)."""
    try:
        argv = ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        listed = subprocess.run(argv, capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
        files = [root / name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        local = {".git", ".venv", ".nox", "__pycache__", ".qualify", "node_modules", "build", "dist"}
        files = [path for path in root.rglob("*") if path.is_file() and not local & set(path.parts)]
    return sorted(path for path in files if path.is_file() and path.suffix not in SKIPPED_SUFFIXES)


def outside_references(path: Path, text: str, root: Path = REPO) -> list[str]:
    """Each reference in ``text`` to something outside the repository, as "file:line: what"."""
    in_tests = path.relative_to(root).parts[0] == "tests"
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        checked = VECTOR_READ.sub("", line) if in_tests else line
        found += [f"{path.relative_to(root)}:{number}: cites {what} ({line.strip()[:100]!r})"
                  for what, pattern in OUTSIDE.items() if pattern.search(checked)]
    return found


def design_sections(design: str) -> set[str]:
    """The numbers of docs/design.md's sections and sub-sections ("3", "3.5")."""
    return set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", design, flags=re.MULTILINE))


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a Markdown file's headings."""
    found = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", "")).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(path: Path, text: str, root: Path = REPO) -> list[str]:
    """Relative Markdown links that leave the repository, name no file, or name no heading."""
    problems = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # a URL (https:, mailto:): not a file of ours
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}: link {target!r}"
        if not dest.is_relative_to(root.resolve()):
            problems.append(f"{where} leaves the repository")
        elif not dest.exists():
            problems.append(f"{where} names no file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(f"{where} names no heading of {dest.name}")
    return problems


def unknown_citations(path: Path, text: str, sections: set[str], root: Path = REPO) -> list[str]:
    found = []
    for match in CITATION.finditer(text):
        for number in re.findall(r"§(\d+(?:\.\d+)?)", match.group(1)):
            if number not in sections:
                found.append(f"{path.relative_to(root)}: cites docs/design.md §{number}, which does not exist")
    return found


def _texts(files: Iterable[Path]) -> Iterable[tuple[Path, str]]:
    for path in files:
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary data of a test (a corrupt archive, a key): no prose to cite from


FILES = project_files()


def test_the_design_is_in_the_repository_with_numbered_sections() -> None:
    sections = design_sections(DESIGN.read_text(encoding="utf-8"))
    assert {"1", "2", "3", "4", "5", "6", "7", "8"} <= sections
    assert DESIGN in FILES


def test_nothing_cites_a_file_outside_the_repository() -> None:
    found = [problem for path, text in _texts(FILES) for problem in outside_references(path, text)]
    assert not found, "\n".join(found)


def test_every_design_citation_names_an_existing_section() -> None:
    sections = design_sections(DESIGN.read_text(encoding="utf-8"))
    cited = [(path, text) for path, text in _texts(FILES) if "docs/design.md" in text]
    assert len(cited) >= 15, "the code cites its design by section"
    found = [problem for path, text in cited for problem in unknown_citations(path, text, sections)]
    assert not found, "\n".join(found)


def test_every_relative_markdown_link_lands_inside_the_repository() -> None:
    found = [problem for path, text in _texts(p for p in FILES if p.suffix == ".md")
             for problem in broken_links(path, text)]
    assert not found, "\n".join(found)


# Each fixture is spelled in pieces, so that this file does not cite what it tests for.
@pytest.mark.parametrize(("where", "line"), [
    ("producer/source/_gate.py", "The source gate (DESIGN" + ".md section 3)."),
    ("README.md", "see ../" + "shared/DESIGN" + ".md"),
    ("noxfile.py", "VECTORS = '../" + "shared/vectors'"),
    ("tools/x.py", "ROOT = '/" + "work/main'"),
    ("reference_app/skillhost/_host.py", "Safe mode (seed " + "002)"),
    ("tests/unit/test_x.py", "see the brief, ../" + "shared/brief.txt"),
    ("tests/unit/test_x.py", "rules from /tmp/" + "shared/rules.txt"),
])
def test_the_check_finds_each_kind_of_outside_reference(tmp_path: Path, where: str, line: str) -> None:
    path = tmp_path / where
    assert outside_references(path, f"ok\n{line}\n", tmp_path)


def test_the_check_lets_tests_read_the_shared_vectors(tmp_path: Path) -> None:
    text = 'VECTORS = REPO.parent / "shared" / "vectors"  # ../shared/vectors, skipped where absent\n'
    assert outside_references(tmp_path / "tests" / "sigstore" / "v.py", text, tmp_path) == []


def test_the_link_and_citation_checks_can_fail(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("# d\n\n## 1. One\n\n### 1.1 Sub\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    text = "[a](docs/design.md#1-one) [b](../outside.md) [c](docs/nothing.md) [d](docs/design.md#2-two) [e](https://x.invalid)"
    assert broken_links(readme, text, tmp_path) == [
        "README.md: link '../outside.md' leaves the repository",
        "README.md: link 'docs/nothing.md' names no file",
        "README.md: link 'docs/design.md#2-two' names no heading of design.md",
    ]
    sections = design_sections((tmp_path / "docs" / "design.md").read_text(encoding="utf-8"))
    assert sections == {"1", "1.1"}
    assert unknown_citations(readme, "(docs/design.md §1, §2.3)", {"1", "2"}, tmp_path) == [
        "README.md: cites docs/design.md §2.3, which does not exist"]
