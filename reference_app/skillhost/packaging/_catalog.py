"""Bundled-skill capability catalog: ast audit, generation, verification."""

import ast
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from skillhost._canon import sha256_hex
from skillhost._errors import SkillError
from skillhost.packaging._manifest import PORT_CAPABILITY, Manifest, parse_manifest

CATALOG_NAME = "capability_catalog.json"
BUNDLED_DIR = "bundled_skills"
MAX_HANDLER_BYTES = 64 * 1024
MAX_MANIFEST_BYTES = 16 * 1024


class HandlerAudit(TypedDict):
    capabilities: list[str]
    imports: list[str]
    problems: list[str]


class CatalogEntry(TypedDict):
    id: str
    handler_sha256: str
    capabilities: list[str]


class Catalog(TypedDict):
    version: int
    skills: list[CatalogEntry]


class _LoadedCatalog(TypedDict):
    """The catalog file after its outer shape is checked; the entries are still unchecked JSON."""

    version: int
    skills: list[object]


# Bundled handlers may import only these pure modules; everything reaching the OS,
# network, processes or the environment must go through a host port.
ALLOWED_IMPORTS = frozenset(
    {"json", "math", "re", "datetime", "itertools", "functools", "collections", "string", "textwrap"}
)
# Named so a refusal says which surface a handler tried to reach around the brokers (docs/design.md §9.2, §9.4).
RAW_MODULES = {
    **dict.fromkeys(("socket", "ssl", "http", "urllib", "urllib3", "requests", "httpx", "dns", "ftplib"), "network"),
    **dict.fromkeys(("smtplib", "select", "selectors", "asyncio"), "network"),
    **dict.fromkeys(("subprocess", "multiprocessing", "pty", "signal", "concurrent"), "process"),
    **dict.fromkeys(("os", "posix", "nt", "sys", "shutil", "pathlib", "io", "tempfile", "glob"), "environment/os"),
    **dict.fromkeys(("ctypes", "cffi", "importlib", "builtins", "marshal", "pickle", "runpy", "code"), "interpreter"),
}
FORBIDDEN_NAMES = frozenset(
    {
        "__import__",
        "eval",
        "exec",
        "compile",
        "open",
        "globals",
        "vars",
        "locals",
        "getattr",
        "setattr",
        "delattr",
        "__builtins__",
        "breakpoint",
        "input",
    }
)


def audit_handler(source: bytes) -> HandlerAudit:  # noqa: PLR0912
    """Return {"capabilities": sorted, "imports": sorted, "problems": [..]} for a handler."""
    problems: list[str] = []
    try:
        tree = ast.parse(source.decode("utf-8"), filename="handler.py")
    except (SyntaxError, UnicodeDecodeError) as exc:
        return {"capabilities": [], "imports": [], "problems": [f"unparsable: {exc.__class__.__name__}"]}
    caps: set[str] = set()
    imports: set[str] = set()
    port_attr_nodes: set[int] = set()
    has_run = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                problems.append("relative import")
            imports.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ports":
            port_attr_nodes.add(id(node.value))
            cap = PORT_CAPABILITY.get(node.attr)
            if cap is None:
                problems.append(f"unknown host port ports.{node.attr}")
            else:
                caps.add(cap)
        elif isinstance(node, ast.FunctionDef) and node.name == "run" and node in tree.body:
            has_run = True
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            problems.append(f"dunder attribute access .{node.attr}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                problems.append(f"forbidden name {node.id}")
            if node.id == "ports" and isinstance(node.ctx, ast.Load) and id(node) not in port_attr_nodes:
                problems.append("ports used other than as ports.<port>")
    for mod in sorted(imports):
        if mod not in ALLOWED_IMPORTS:
            kind = RAW_MODULES.get(mod, "not allow-listed")
            problems.append(f"raw module import {mod} ({kind})")
    if not has_run:
        problems.append("no top-level def run(ports, args)")
    return {"capabilities": sorted(caps), "imports": sorted(imports), "problems": sorted(set(problems))}


def _read_regular(path: Path, cap: int) -> bytes:
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{path.name} is not a regular file")
    with Path(path).open("rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{path.name} too large")
    return data


def bundled_root(pkg_dir: Path) -> Path:
    return Path(pkg_dir) / BUNDLED_DIR


def read_bundled(pkg_dir: Path, skill_id: str) -> tuple[Manifest, bytes]:
    """Re-read one bundled skill: (manifest dict, handler bytes). Enforces containment."""
    root = bundled_root(pkg_dir).resolve()
    sdir = bundled_root(pkg_dir) / skill_id
    if sdir.is_symlink() or sdir.resolve().parent != root:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{skill_id}: skill dir escapes the bundle")
    manifest = parse_manifest(_read_regular(sdir / "SKILL.md", MAX_MANIFEST_BYTES).decode("utf-8"))
    if manifest["id"] != skill_id:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{skill_id}: SKILL.md id mismatch")
    handler = _read_regular(sdir / "handler.py", MAX_HANDLER_BYTES)
    return manifest, handler


def list_bundled(pkg_dir: Path) -> list[str]:
    root = bundled_root(pkg_dir)
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def generate(pkg_dir: Path) -> tuple[Catalog, list[str]]:
    """Return (catalog dict, problems list) from the bundled handlers on disk."""
    skills: list[CatalogEntry] = []
    problems: list[str] = []
    for skill_id in list_bundled(pkg_dir):
        try:
            manifest, handler = read_bundled(pkg_dir, skill_id)
        except SkillError as exc:
            problems.append(f"{skill_id}: {exc.code} {exc.message}")
            continue
        audit = audit_handler(handler)
        problems.extend(f"{skill_id}: {p}" for p in audit["problems"])
        declared, used = set(manifest["capabilities"]), set(audit["capabilities"])
        for cap in sorted(used - declared):
            problems.append(f"{skill_id}: under-declared capability {cap}")
        for cap in sorted(declared - used):
            problems.append(f"{skill_id}: over-declared capability {cap}")
        skills.append({"id": skill_id, "handler_sha256": sha256_hex(handler), "capabilities": sorted(used)})
    return {"version": 1, "skills": skills}, problems


def render(catalog: Catalog) -> bytes:
    return (json.dumps(catalog, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode("ascii")


def load_catalog(pkg_dir: Path) -> _LoadedCatalog:
    path = Path(pkg_dir) / CATALOG_NAME
    try:
        raw = _read_regular(path, 256 * 1024)
        catalog = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"catalog unreadable: {exc.__class__.__name__}") from None
    skills = catalog.get("skills") if isinstance(catalog, dict) else None
    if not isinstance(catalog, dict) or catalog.get("version") != 1 or not isinstance(skills, list):
        raise SkillError("CC_SKILL_CATALOG_DRIFT", "catalog has the wrong shape")
    return {"version": 1, "skills": skills}


def verify(pkg_dir: Path) -> dict[str, CatalogEntry]:
    """Runtime check: catalog == re-hashed handlers == SKILL.md == ast audit. Returns {id: entry}."""
    catalog = load_catalog(pkg_dir)
    entries: dict[str, Mapping[str, object]] = {}
    for entry in catalog["skills"]:
        entry_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry_id, str):
            raise SkillError("CC_SKILL_CATALOG_DRIFT", "malformed catalog entry")
        entries[entry_id] = entry
    on_disk = list_bundled(pkg_dir)
    if sorted(entries) != on_disk:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", "catalog skill set differs from bundled skills")
    checked: dict[str, CatalogEntry] = {}
    for skill_id in on_disk:
        manifest, handler = check_entry(pkg_dir, entries[skill_id])
        # Every field now equals what was re-derived from disk, so the typed entry is rebuilt from those values.
        checked[skill_id] = {
            "id": skill_id,
            "handler_sha256": sha256_hex(handler),
            "capabilities": manifest["capabilities"],
        }
    return checked


def check_entry(pkg_dir: Path, entry: Mapping[str, object]) -> tuple[Manifest, bytes]:
    skill_id = entry["id"]
    if not isinstance(skill_id, str):
        raise SkillError("CC_SKILL_CATALOG_DRIFT", "malformed catalog entry")
    manifest, handler = read_bundled(pkg_dir, skill_id)
    if sha256_hex(handler) != entry.get("handler_sha256"):
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{skill_id}: handler digest differs from catalog")
    if manifest["capabilities"] != entry.get("capabilities"):
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{skill_id}: SKILL.md capabilities differ from catalog")
    audit = audit_handler(handler)
    if audit["problems"] or audit["capabilities"] != entry["capabilities"]:
        raise SkillError("CC_SKILL_CATALOG_DRIFT", f"{skill_id}: handler audit disagrees with catalog")
    return manifest, handler
