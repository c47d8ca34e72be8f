"""The commands a workflow's `run:` script invokes, for the rules that say what a signing job may run.

A small reader of the shell the workflows use (bash): it finds every simple command's argv, including
those inside command substitutions (``$(...)`` and backquotes, even inside double quotes), subshells,
``if``/``while``/``for``/``case`` bodies and ``{ ...; }`` groups, and leaves out what invokes nothing
(assignments, redirection targets, arithmetic, array literals, ``case`` patterns, comments). It is
deliberately stricter than bash where the two could differ: a ``$(`` inside single quotes is read as a
command too, so a rule built on it can refuse a harmless script but never miss an invoked program.
"""

from __future__ import annotations

import re
import shlex

# Reserved words that open or continue a compound command: the next word is a command again.
_OPENERS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
# Reserved words that close one: they invoke nothing.
_CLOSERS = {"fi", "done", "esac", "}"}
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "|&"}
_REDIRECTIONS = {">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_ARRAY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*\+?=)\(")


def _closing(text: str, start: int) -> int:
    """The index just after the ``)`` that closes the ``(`` at ``start`` (quotes respected)."""
    depth, i, quote = 0, start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced parentheses in {text[start:start + 60]!r}")


def _lift(script: str) -> tuple[str, list[str]]:
    """The script with every substitution, arithmetic and array literal replaced by a plain word.

    Returns the flattened script and the inner scripts of its command substitutions, to be read in turn.
    """
    inner: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(script):
        if script.startswith("$((", i):
            end = _closing(script, i + 1)
            out.append("0")
            i = end
        elif script.startswith("$(", i):
            end = _closing(script, i + 1)
            inner.append(script[i + 2:end - 1])
            out.append("__substitution__")
            i = end
        elif script[i] == "`":
            end = script.find("`", i + 1)
            if end < 0:
                raise ValueError("unbalanced backquote")
            inner.append(script[i + 1:end])
            out.append("__substitution__")
            i = end + 1
        elif (array := _ARRAY.match(script, i)) is not None and (i == 0 or not (script[i - 1].isalnum()
                                                                                  or script[i - 1] == "_")):
            end = _closing(script, array.end() - 1)
            out.append(array.group(1) + "__array__")
            i = end
        else:
            out.append(script[i])
            i += 1
    return "".join(out), inner


_OPERATORS = (";;", "&&", "||", "|&", "&>>", "&>", ">>", ">&", ">|", "<<<", "<<", "<&")


def _uncommented(script: str) -> str:
    """The script without its comments: a `#` that starts a word, outside quotes, to the end of its line."""
    out: list[str] = []
    quote, i = "", 0
    while i < len(script):
        c = script[i]
        if quote:
            if c == "\\" and quote == '"':
                out.append(script[i:i + 2])
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            out.append(script[i:i + 2])
            i += 2
            continue
        elif c == "#" and (i == 0 or script[i - 1] in " \t\n;&|()"):
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _operators(token: str) -> list[str]:
    """shlex groups neighbouring punctuation (`);`, `))`): the shell operators it stands for."""
    found = []
    while token:
        operator = next((op for op in _OPERATORS if token.startswith(op)), token[0])
        found.append(operator)
        token = token[len(operator):]
    return found


def _tokens(script: str) -> list[str]:
    # A newline ends a command like `;` does (a continuation was joined before).
    lexer = shlex.shlex(_uncommented(script).replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    tokens: list[str] = []
    for token in lexer:
        tokens += _operators(token) if token and all(c in ";&|()<>" for c in token) else [token]
    return tokens


class _Reader:
    """The simple commands of one flattened script, token by token."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.found: list[list[str]] = []
        self.expect = True  # the next word is a command word
        self.current: list[str] | None = None  # the argv being collected
        self.state = ""  # "for" (its word list), "case" (up to `in`), "pattern" (a case pattern up to `)`)
        self.skip_redirect = False

    def take(self, token: str) -> None:
        if self.skip_redirect:
            self.skip_redirect = False
        elif self.state:
            self._compound_header(token)
        elif token == ";;":
            self.current, self.state = None, "pattern"
        elif token in _REDIRECTIONS:
            self.skip_redirect = True
        elif token in _SEPARATORS:
            self.current, self.expect = None, True
        elif self.current is not None:
            self.current.append(token)
        else:
            self._command_word(token)

    def _compound_header(self, token: str) -> None:
        """The words of a `for` or `case` header and of `case` patterns: none of them is a command."""
        if self.state == "for" and token in (";", "do"):
            self.state, self.expect = "", True
        elif self.state == "case" and token == "in":
            self.state = "pattern"
        elif self.state == "pattern" and token in ("esac", ")"):
            self.state, self.expect = "", token == ")"

    def _command_word(self, token: str) -> None:
        if not self.expect and token not in _CLOSERS:
            # After a closing word (`fi`, `done`, `}`, `esac`) only a separator or a redirection may follow.
            raise ValueError(f"unexpected word {token!r} in {self.script[:80]!r}")
        if token in _OPENERS or _ASSIGNMENT.match(token):
            self.expect = True
        elif token in _CLOSERS:
            self.expect = False
        elif token in ("for", "case"):
            self.state = token
        else:
            self.current = [token]
            self.found.append(self.current)


def invoked(script: str) -> list[list[str]]:
    """Every simple command ``script`` runs, as its argv (quotes removed), in order of appearance."""
    flat, substitutions = _lift(script.replace("\\\n", " "))
    reader = _Reader(script)
    for token in _tokens(flat):
        reader.take(token)
    found = reader.found
    for inner in substitutions:
        found += invoked(inner)
    return found
