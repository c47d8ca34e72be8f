"""JSON-like text that explores the bounded loader's edges: duplicates, depth, odd numbers, odd strings.

Serialised by hand rather than by ``json.dumps`` so that an object can repeat
a key and a number can be any token, valid or not.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from .mutations import apply_byte_ops, byte_ops

NUMBER_TOKENS = ("0", "-0", "1", "-1", "1.5", "1e400", "-1e400", "1E-400", "NaN", "Infinity", "-Infinity",
                 "01", "1.", ".5", "+1", "0x10", "9" * 4400, "-" + "9" * 5000, "1e99999999999")
STRING_TOKENS = ('"\\ud800"', '"\\udc00\\ud800"', '"\\u0000"', '"\\"', '"\\x41"', '"unterminated', '"[[[["',
                 '"\\\\"', '"\\\\\\""', '"]}"')


def _string() -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=10).map(json.dumps),
                     st.text(max_size=10).map(lambda s: json.dumps(s, ensure_ascii=False)),
                     st.sampled_from(STRING_TOKENS))


def _scalar() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(("true", "false", "null", *NUMBER_TOKENS)), st.integers().map(str),
                     st.floats(allow_nan=False, allow_infinity=False).map(repr), _string())


def _key() -> st.SearchStrategy[str]:
    # A small alphabet of keys so that duplicates come up on their own.
    return st.one_of(st.sampled_from(('"a"', '"b"', '"payload"', '"signatures"', '"_type"')), _string())


def json_text() -> st.SearchStrategy[str]:
    return st.recursive(_scalar(), lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(_key(), inner), max_size=4).map(
            lambda kvs: "{" + ",".join(f"{k}:{v}" for k, v in kvs) + "}"),
    ), max_leaves=12)


def deep_text() -> st.SearchStrategy[str]:
    """Nesting around the depth limit (24), balanced or not, arrays or objects."""

    def nest(args: tuple[int, str, str, int]) -> str:
        depth, kind, leaf, missing = args
        opener, closer = ("[", "]") if kind == "array" else ('{"k":', "}")
        return opener * depth + leaf + closer * max(0, depth - missing)

    return st.tuples(st.integers(0, 70), st.sampled_from(["array", "object"]), _scalar(),
                     st.sampled_from([0, 0, 0, 1, 5])).map(nest)


def to_bytes(text: str) -> bytes:
    # surrogatepass: a lone surrogate becomes bytes that are not UTF-8, another input worth having.
    return text.encode("utf-8", "surrogatepass")


def json_bytes() -> st.SearchStrategy[bytes]:
    texts = st.one_of(json_text(), deep_text()).map(to_bytes)
    return st.one_of(
        texts,
        st.tuples(texts, byte_ops()).map(lambda t: apply_byte_ops(*t)),
        st.binary(max_size=64),
    )
