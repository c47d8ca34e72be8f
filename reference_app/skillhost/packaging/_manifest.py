"""SKILL.md front matter (a small, strict YAML subset) and the capability vocabulary."""

import re
from typing import TypedDict

from skillhost._errors import SkillError

# A front-matter value is a scalar string or a list of strings; nothing else parses.
FrontMatter = dict[str, str | list[str]]


class Manifest(TypedDict):
    """What ``parse_manifest`` vouches for: the id, a display name and the sorted capability list."""

    id: str
    name: str
    capabilities: list[str]


# host port -> capability
PORT_CAPABILITY = {
    "time": "runtime:time",
    "logger": "host:logger",
    "fs": "filesystem:read",
    "env": "environment:read",
    "process": "process:exec",
    "https": "network:https",
    "loopback": "service:loopback",
}
KNOWN_CAPABILITIES = frozenset(PORT_CAPABILITY.values())
SKILL_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_KEY_RE = re.compile(r"^([a-z][a-z0-9-]*):\s*(.*)$")
_ITEM_RE = re.compile(r"^\s+-\s+(\S.*)$")


def parse_front_matter(text: str) -> FrontMatter:
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "SKILL.md has no front matter")
    fields: FrontMatter = {}
    current_list: list[str] | None = None
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM_RE.match(line)
        if item:
            if current_list is None:
                raise SkillError("CC_SKILL_MANIFEST_INVALID", "list item outside a list")
            current_list.append(item.group(1).strip().strip("'\""))
            continue
        kv = _KEY_RE.match(line)
        if not kv:
            raise SkillError("CC_SKILL_MANIFEST_INVALID", f"unparsable front matter line: {line[:60]!r}")
        key, value = kv.group(1), kv.group(2).strip()
        if key in fields:
            raise SkillError("CC_SKILL_MANIFEST_INVALID", f"duplicate key {key}")
        if value == "":
            current_list = []
            fields[key] = current_list
        elif value == "[]":
            current_list = None
            fields[key] = []
        else:
            current_list = None
            fields[key] = value.strip("'\"")
    raise SkillError("CC_SKILL_MANIFEST_INVALID", "front matter not terminated")


# Everything a manifest may say. Anything else (install hooks, scripts, dependencies,
# a second entry point) is refused rather than ignored: an ignored field is a field
# someone will one day believe is enforced.
KNOWN_FIELDS = frozenset({"id", "name", "description", "version", "execution-capabilities", "entry"})
ENTRY_POINT = "handler.py"


def _check_entry(value: object) -> None:
    if value == ENTRY_POINT:
        return
    if not isinstance(value, str):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "entry must be a string")
    if ".." in re.split(r"[\\/]", value) or value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
        raise SkillError("CC_SKILL_PACKAGE_INVALID", "path traversal in entry point")
    raise SkillError("CC_SKILL_PACKAGE_INVALID", f"bad entry point {value[:40]!r}: the only entry is {ENTRY_POINT}")


def parse_manifest(text: str) -> Manifest:
    """Return {"id", "name", "capabilities": sorted list}; fail closed on anything odd."""
    fields = parse_front_matter(text)
    unknown = sorted(set(fields) - KNOWN_FIELDS)
    if unknown:
        raise SkillError("CC_SKILL_PACKAGE_INVALID", f"unknown manifest field(s): {', '.join(unknown)[:80]}")
    if "entry" in fields:
        _check_entry(fields["entry"])
    skill_id = fields.get("id")
    if not isinstance(skill_id, str) or not SKILL_ID_RE.match(skill_id):
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "missing or malformed id")
    name = fields.get("name", skill_id)
    if not isinstance(name, str):
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "name must be a string")
    if "execution-capabilities" not in fields:
        raise SkillError("CC_SKILL_CAPABILITY_MISSING", f"{skill_id}: no execution-capabilities list")
    caps = fields["execution-capabilities"]
    if not isinstance(caps, list):
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "execution-capabilities must be a list")
    for cap in caps:
        if cap not in KNOWN_CAPABILITIES:
            raise SkillError("CC_SKILL_CAPABILITY_UNKNOWN", f"{skill_id}: unknown capability {cap[:60]!r}")
    if len(set(caps)) != len(caps):
        raise SkillError("CC_SKILL_MANIFEST_INVALID", "duplicate capability")
    return {"id": skill_id, "name": name[:120], "capabilities": sorted(caps)}
