"""The policy file's field reference (docs/policy.md), rendered from the models themselves.

Every section and field of ``PolicyFile`` becomes a row of a Markdown table: the field's TOML key, its type
(with the bounds and patterns the loader enforces), its default (or "required") and its meaning, which is the
field's docstring (the string under it, as pydantic's ``use_attribute_docstrings`` reads it). One heading per
section, in the models' order. The block sits between two markers in docs/policy.md; a drift test regenerates
it and fails on any difference, and on any field without a docstring.

Regenerate with ``python -m desktop_qualify.qualify_policy reference --out docs/policy.md``.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from desktop_qualify.evidence_schemas import attribute_docstrings
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ._model import PolicyFile

BEGIN = "<!-- BEGIN GENERATED: python -m desktop_qualify.qualify_policy reference --out docs/policy.md -->"
END = "<!-- END GENERATED -->"


@dataclass(frozen=True)
class _Section:
    """One table of the reference: a TOML table name, its model, and the words that introduce it."""

    key: str
    model: type[BaseModel]
    intro: str
    variant: str = ""


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _strip(tp: Any) -> tuple[Any, list[Any]]:
    """``tp`` without ``Annotated``, and the constraints it carried (outermost first)."""
    metadata: list[Any] = []
    while get_origin(tp) is typing.Annotated:
        tp, *extra = get_args(tp)
        metadata.extend(extra)
    return tp, metadata


def _members(tp: Any) -> list[Any]:
    """The members of a union (``X | None`` too), or ``[tp]``."""
    return list(get_args(tp)) if get_origin(tp) in (Union, types.UnionType) else [tp]


def _models_in(tp: Any) -> list[type[BaseModel]]:
    """The models a field's value may be (a union's, a dict's values', not a list's items)."""
    tp, _ = _strip(tp)
    found: list[type[BaseModel]] = []
    for member in _members(tp):
        bare, _ = _strip(member)
        if _is_model(bare):
            found.append(bare)
    return found


def _dict_value_model(tp: Any) -> type[BaseModel] | None:
    tp, _ = _strip(tp)
    for member in _members(tp):
        bare, _ = _strip(member)
        if get_origin(bare) is dict:
            value, _ = _strip(get_args(bare)[1])
            if _is_model(value):
                return typing.cast(type[BaseModel], value)
    return None


def _flatten(metadata: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.extend(item.metadata)
        else:
            out.append(item)
    return out


def _bounds(metadata: list[Any], unit: str) -> str:
    """The constraints pydantic enforces, in words: ``1 to 8 items``, ``matches `^...$```."""
    low = high = pattern = None
    for item in _flatten(metadata):  # annotated_types' MinLen, MaxLen, Ge, Le; pydantic's pattern
        for name in ("min_length", "ge"):
            low = getattr(item, name, None) if getattr(item, name, None) is not None else low
        for name in ("max_length", "le"):
            high = getattr(item, name, None) if getattr(item, name, None) is not None else high
        pattern = getattr(item, "pattern", None) or pattern
    words = []
    if low is not None and high is not None:
        words.append(f"{low} to {high}{unit}")
    elif low is not None:
        words.append(f"at least {low}{unit}")
    elif high is not None:
        words.append(f"at most {high}{unit}")
    if pattern is not None:
        words.append(f"matching `{pattern}`")
    return ", ".join(words)


def _type_text(tp: Any, metadata: list[Any] | None = None) -> str:
    """A reader's name for a field's type: ``string``, ``list of string (1 to 8 items)``, ``"allow" or table``."""
    tp, own = _strip(tp)
    metadata = [*(metadata or []), *own]
    members = [m for m in _members(tp) if m is not type(None)]
    if len(members) > 1:
        texts = list(dict.fromkeys(_type_text(m) for m in members))  # a discriminated union: "table" once
        return " or ".join(texts) + (f" ({_bounds(metadata, ' items')})" if _bounds(metadata, " items") else "")
    tp = members[0]
    if get_origin(tp) is typing.Annotated or len(_members(tp)) > 1:  # ``Annotated[...] | None``, unwrapped
        return _type_text(tp, metadata)
    origin = get_origin(tp)
    if origin is Literal:
        return " or ".join(f"`{json.dumps(v)}`" for v in get_args(tp))
    if _is_model(tp):
        return "table"
    if origin is list:
        bounds = _bounds(metadata, " items")
        return "list" + (f" ({bounds})" if bounds else "") + f" of {_type_text(get_args(tp)[0])}"
    if origin is dict:
        key, value = get_args(tp)
        bounds = _bounds(metadata, " entries")
        value_text = "table" if _is_model(_strip(value)[0]) else _type_text(value)
        return "table" + (f" ({bounds})" if bounds else "") + f" of {_type_text(key)} → {value_text}"
    name = {str: "string", int: "integer", bool: "boolean"}.get(tp, getattr(tp, "__name__", str(tp)))
    bounds = _bounds(metadata, " characters" if tp is str else "")
    return f"{name} ({bounds})" if bounds else name


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML spelling for {value!r}")


def _default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    if value is None:
        return "absent"
    if isinstance(value, BaseModel):
        return "absent (each field at its default)"
    return f"`{_toml(value)}`"


def _markdown(text: str) -> str:
    """A docstring's reStructuredText code spans (````x````) as Markdown's (```x```)."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return " ".join(_markdown(text).split()).replace("|", "\\|")


def _sections() -> Iterator[_Section]:
    """Every table of the policy file, depth first in the models' order, each once."""

    def walk(key: str, model: type[BaseModel], intro: str, variant: str = "") -> Iterator[_Section]:
        yield _Section(key, model, intro, variant)
        docs = attribute_docstrings(model)
        for name, field in model.model_fields.items():
            child = f"{key}.{name}" if key else name
            doc = docs.get(name, "")
            value_model = _dict_value_model(field.annotation)
            if value_model is not None:
                yield from walk(f"{child}.<name>", value_model, doc)
                continue
            models = _models_in(field.annotation)
            for sub in models:
                label, variant = child, ""
                if len(models) > 1:  # a discriminated union: one table per choice
                    tag = sub.model_fields.get("mode")
                    variant = f"mode = {json.dumps(get_args(tag.annotation)[0])}" if tag else sub.__name__
                if set(sub.model_fields) == {"linux", "macos", "windows"}:
                    # A per-platform table whose values are tables: ``[app.install.linux]``.
                    inner = _models_in(next(iter(sub.model_fields.values())).annotation)
                    if inner:
                        yield _Section(label, sub, doc)
                        yield from walk(f"{label}.<platform>", inner[0], "")
                        continue
                yield from walk(label, sub, doc, variant)

    yield from walk("", PolicyFile, "")


def undocumented_fields() -> list[str]:
    """Every policy field (``section.key``) without a docstring; the reference requires one for each."""
    missing = []
    for section in _sections():
        docs = attribute_docstrings(section.model)
        for name in section.model.model_fields:
            if not docs.get(name, "").strip():
                missing.append(f"{section.key}.{name}" if section.key else name)
    return missing


def render_policy_reference() -> str:
    """The policy file's field reference as Markdown: one heading and table per section, from the models.

    Each row is a key, its type (with the bounds the loader enforces), its default ("required" where the
    policy must name it, "absent" where leaving it out is allowed and means none) and its meaning, the
    field's docstring. This is the block between the markers in docs/policy.md (markers excluded);
    ``write_policy_reference`` puts it there.
    """
    out: list[str] = []
    for section in _sections():
        heading = "Top level" if not section.key else f"`[{section.key}]`"
        if section.variant:
            heading += f" with `{section.variant}`"
        out += [f"### {heading}", ""]
        class_doc = section.model.__dict__.get("__doc__") or ""
        intro = "\n\n".join(text for text in (section.intro, class_doc) if text.strip())
        if intro:
            out += [_wrap(intro), ""]
        docs = attribute_docstrings(section.model)
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for name, field in section.model.model_fields.items():
            type_text = _type_text(field.annotation, list(field.metadata))
            out.append(f"| `{name}` | {_cell(type_text)} | {_cell(_default_text(field))} "
                       f"| {_cell(docs.get(name, ''))} |")
        out.append("")
    return "\n".join(out)


def _wrap(text: str) -> str:
    """One paragraph, joined from a docstring's lines (a Markdown paragraph may be any width)."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(_markdown(p).split()) for p in paragraphs)


def replace_generated_block(page: str, block: str) -> str:
    """``page`` with the text between the reference's markers replaced by ``block``."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no '{BEGIN}' ... '{END}' markers")
    return page[:start + len(BEGIN)] + "\n\n" + block.rstrip("\n") + "\n\n" + page[end:]


def write_policy_reference(page: Path) -> bool:
    """Regenerate the reference between the markers of ``page`` (docs/policy.md); True when it changed."""
    before = page.read_text(encoding="utf-8")
    after = replace_generated_block(before, render_policy_reference())
    if after != before:
        page.write_text(after, encoding="utf-8")
    return after != before


__all__ = ["render_policy_reference", "undocumented_fields", "write_policy_reference"]
