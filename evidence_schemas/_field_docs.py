"""Field descriptions for the exported JSON Schemas, read from the models' attribute docstrings.

A field is documented the way pydantic's ``use_attribute_docstrings`` reads it: a string
literal right under the annotated field. The docstrings are read here, when schemas are
exported, and not by pydantic when a model class is created: on Python 3.11 that reading
walks the import's frames for every class and costs about a third of the models' import
time, which every ``qualify verify`` would pay for a text no check reads.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue


@functools.cache
def _own_attribute_docstrings(cls: type) -> dict[str, str]:
    """``field name -> docstring`` for the fields ``cls`` itself declares (not those it inherits)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # no source to read (a frozen or interactive copy): no descriptions
        return {}
    tree = ast.parse(source)
    body = next(node.body for node in tree.body if isinstance(node, ast.ClassDef))
    docs: dict[str, str] = {}
    for field, after in itertools.pairwise(body):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs


def attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """``field name -> docstring`` for every field of ``model``, a redeclared field's from its latest class.

    A parametrized generic (``PerPlatform[InstallTarget]``) has no source of its own: its origin class's is read.
    """
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            origin = cls.__pydantic_generic_metadata__["origin"] or cls
            docs.update(_own_attribute_docstrings(origin))
    return {name: doc for name, doc in docs.items() if name in model.model_fields}


class DescribedFields(GenerateJsonSchema):
    """pydantic's JSON Schema generator, with each field's attribute docstring as its description.

    A description the field already has (``Field(description=...)``) is kept.
    """

    # ``schema`` is pydantic-core's ModelSchema, typed loosely: this package imports pydantic, not pydantic-core.
    def model_schema(self, schema: Any) -> JsonSchemaValue:
        """The model's schema, each property described by its field's docstring."""
        json_schema = super().model_schema(schema)
        model: type[BaseModel] = schema["cls"]
        properties: dict[str, Any] = json_schema.get("properties", {})
        for name, doc in attribute_docstrings(model).items():
            field = model.model_fields[name]
            key = field.alias if self.by_alias and field.alias else name
            if key in properties and "description" not in properties[key]:
                properties[key] = {**properties[key], "description": doc}
        return json_schema
