"""What an external handler's code can name inside the worker: builtins and module views.

Standard library only: the worker imports this module. Defence in depth, not a
security boundary (README, "Known boundaries"):

* the builtins are an allow-list, so reflection (``type``, ``object``, ``vars``,
  ``dir``, ``getattr``...) and code loading (``compile``, ``eval``, ``exec``,
  ``open``, ``__import__``) are simply absent rather than removed one by one;
* ``import re`` binds a *view* exposing only ``re``'s public functions, classes
  and constants, never the module object, so ``re.enum.sys``,
  ``re.functools`` and ``collections.abc.sys`` do not exist for the handler.
"""

from __future__ import annotations

import builtins
import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType

from skillhost.worker._handler_rules import ALLOWED_HANDLER_IMPORTS

# Everything a handler needs for plain computation; each name was checked not to reach the interpreter.
_SAFE_BUILTINS = [
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "complex",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "hasattr",
    "hash",
    "hex",
    "id",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "oct",
    "ord",
    "pow",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "zip",
    "None",
    "Ellipsis",
    "NotImplemented",
    "False",
    "True",
]
# Public names of allowed modules that read attributes named by a runtime string (getattr stand-ins:
# ``update_wrapper(w, gen, assigned=("gi_frame",))``, ``Formatter().get_field``) or evaluate strings
# (``singledispatch.register`` runs ``typing.get_type_hints``, which evals string annotations).
_DENIED_EXPORTS = {
    "functools": frozenset({"update_wrapper", "wraps", "singledispatch", "singledispatchmethod"}),
    "string": frozenset({"Formatter"}),
}
_CONSTANT_TYPES = (bool, int, float, complex, str, bytes)


class ImportDeniedError(Exception):
    pass


def _exports(name: str, module: ModuleType) -> dict[str, object]:
    denied = _DENIED_EXPORTS.get(name, frozenset())
    out: dict[str, object] = {}
    for key, value in vars(module).items():
        if key.startswith("_") or key in denied or isinstance(value, ModuleType):
            continue
        # Functions, classes and plain constants only: no capsules, no module-level state objects.
        if callable(value) or isinstance(value, _CONSTANT_TYPES):
            out[key] = value
    return out


def module_view(name: str, module: ModuleType) -> object:
    """An object whose attributes are ``module``'s exports; it holds no reference to the module itself."""
    exports = _exports(name, module)
    label = f"<module view {name}>"

    class ModuleView:
        __slots__ = ()

        def __getattr__(self, attr: str) -> object:
            try:
                return exports[attr]
            except KeyError:
                raise AttributeError(attr) from None

        def __setattr__(self, attr: str, value: object) -> None:
            raise AttributeError(attr)

        def __repr__(self) -> str:
            return label

    return ModuleView()


def _views() -> dict[str, object]:
    return {name: module_view(name, importlib.import_module(name)) for name in sorted(ALLOWED_HANDLER_IMPORTS)}


def handler_builtins() -> dict[str, object]:
    """The ``__builtins__`` of the handler's namespace: an allow-list, the import guard, a silent print."""
    table = vars(builtins)
    b: dict[str, object] = {name: table[name] for name in _SAFE_BUILTINS}
    # Exception classes are needed for try/except and raise; they carry no interpreter handle.
    for name, value in table.items():
        if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_"):
            b[name] = value
    # ``class`` statements need the class builder.
    b["__build_class__"] = table["__build_class__"]
    views = _views()

    def guarded_import(
        name: str,
        globals: Mapping[str, object] | None = None,
        locals: Mapping[str, object] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> object:
        if level or name not in views:
            raise ImportDeniedError(name)
        view = views[name]
        # ``from collections import abc`` passes the static rules (an allowed module, a plain name) and
        # names a submodule; the guard refuses it here rather than letting the view answer AttributeError.
        for item in fromlist or ():
            if not hasattr(view, item):
                raise ImportDeniedError(f"{name}.{item}")
        return view

    b["__import__"] = guarded_import
    b["print"] = lambda *a, **k: None
    return b
