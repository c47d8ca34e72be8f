"""Every committed JSON Schema says what each definition and each field is: an auditor learns more than names.

The words are the models' own docstrings (a class's, and each field's attribute docstring), exported by
``qualify schemas``; the drift test in test_schemas_and_models.py keeps the files equal to the models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import render_schemas
from desktop_qualify.evidence_schemas._field_docs import DescribedFields
from pydantic import BaseModel, ConfigDict, Field

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted((REPO / "schemas").glob("*.schema.json"))


def undescribed(schema: dict[str, Any]) -> Iterator[str]:
    """The JSON pointer of every definition and property (the document's own included) with no description."""

    def walk(node: dict[str, Any], where: str) -> Iterator[str]:
        if not str(node.get("description", "")).strip():
            yield where or "/"
        for name, prop in node.get("properties", {}).items():
            if not str(prop.get("description", "")).strip():
                yield f"{where}/properties/{name}"

    yield from walk(schema, "")
    for name, definition in schema.get("$defs", {}).items():
        yield from walk(definition, f"/$defs/{name}")


def test_the_committed_schemas_are_all_found() -> None:
    assert len(COMMITTED) == len(render_schemas()) >= 15


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_every_definition_and_field_of_a_committed_schema_is_described(path: Path) -> None:
    missing = list(undescribed(json.loads(path.read_bytes())))
    assert not missing, (f"{path.name}: no description at {missing}; document the class or the field "
                         "(a docstring under it) and run 'qualify schemas --out schemas'")


def test_a_field_without_a_description_is_found() -> None:
    schema = json.loads((REPO / "schemas" / "build-record.schema.json").read_bytes())
    del schema["$defs"]["ArtifactRef"]["properties"]["sha256"]["description"]
    schema["properties"]["kind"]["description"] = "  "
    assert list(undescribed(schema)) == ["/properties/kind", "/$defs/ArtifactRef/properties/sha256"]


def test_a_definition_without_a_description_is_found() -> None:
    schema = json.loads((REPO / "schemas" / "platform-statement.schema.json").read_bytes())
    del schema["$defs"]["RunIdentity"]["description"]
    del schema["description"]
    assert list(undescribed(schema)) == ["/", "/$defs/RunIdentity"]


# -- the exporter reads attribute docstrings as pydantic does ----------------------------------------------


class _PydanticReads(BaseModel):
    """The same models with pydantic's own reading of attribute docstrings, to compare with."""

    model_config = ConfigDict(use_attribute_docstrings=True)


def _models(base: type[BaseModel]) -> type[BaseModel]:
    """A small family of models: a nested model, an aliased field, a redeclared field, a Field description."""

    class Inner(base):
        """An inner model."""

        value: int
        """The inner value."""

    class Head(base):
        """A base with an aliased field and a field a subclass redeclares."""

        model_config = ConfigDict(populate_by_name=True)

        type_: str = Field(alias="_type")
        """The type, under its alias."""
        tag: str
        """The base's word for the tag."""

    class Outer(Head):
        """An outer model."""

        tag: str
        """The subclass's word for the tag."""
        inner: Inner
        """The inner model, by reference."""
        given: int = Field(description="Given with Field, kept.")
        """Not used: the Field's description wins."""
        bare: int

    return Outer


def test_the_exporter_describes_fields_from_their_docstrings() -> None:
    schema = _models(BaseModel).model_json_schema(by_alias=True, schema_generator=DescribedFields)
    props = schema["properties"]
    assert props["_type"]["description"] == "The type, under its alias."
    assert props["tag"]["description"] == "The subclass's word for the tag."
    assert props["inner"] == {"$ref": "#/$defs/Inner", "description": "The inner model, by reference."}
    assert props["given"]["description"] == "Given with Field, kept."
    assert schema["$defs"]["Inner"]["properties"]["value"]["description"] == "The inner value."
    # A field with no docstring gets no description, and the check above names it.
    assert "description" not in props["bare"]
    assert list(undescribed(schema)) == ["/properties/bare"]


def test_the_exporter_agrees_with_pydantics_own_attribute_docstrings() -> None:
    ours = _models(BaseModel).model_json_schema(by_alias=True, schema_generator=DescribedFields)
    theirs = _models(_PydanticReads).model_json_schema(by_alias=True)
    assert theirs["properties"]["inner"]["description"] == "The inner model, by reference."  # pydantic did read
    assert ours == theirs


def test_models_pay_nothing_for_their_docstrings_at_run_time() -> None:
    """The descriptions are read at export time only: a model's fields carry none, so a verify reads no source."""
    from desktop_qualify.evidence_schemas import BuildRecord

    assert BuildRecord.model_fields["build_sha"].description is None
