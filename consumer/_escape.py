"""The one escaper for Markdown (the job summary and ``qualify audit --markdown``) and the one for terminal fields.

Evidence text is untrusted: a run id, a reason quoting a record, a file name.
Whatever it holds, a reader must see it as text, never as a heading, a link,
an HTML comment or a second verdict line:

- line breaks (every character ``str.splitlines`` splits on) are flattened;
- every ASCII character that can start Markdown or HTML markup is
  backslash-escaped in text, with ``:``, ``@`` and the dot of ``www.`` too, so
  GitHub's bare-URL and e-mail autolinks cannot start;
- a code span can be neither closed early (a backtick becomes ``'``) nor split
  a table (a pipe is escaped).

On a terminal, a field's newlines, tabs and every control, format and
separator character are shown as escapes, so evidence cannot start a line of
its own (see ``qualify_runtime.terminal_field``).
"""

from __future__ import annotations

import re

from desktop_qualify.qualify_runtime import terminal_field

__all__ = ["md_code", "md_text", "one_line", "terminal_field"]

_PUNCTUATION = re.compile(r"([\\`*_\[\]<>|#!~&$:@])")
_WWW = re.compile(r"(?i)(www)\.")


def one_line(text: object) -> str:
    return " ".join(str(text).splitlines())


def md_text(text: object) -> str:
    """Untrusted text as literal Markdown: every character that could start markup is escaped."""
    return _WWW.sub(r"\1\\.", _PUNCTUATION.sub(r"\\\1", one_line(text)))


def md_code(text: object) -> str:
    """A code span (literal): a backtick cannot close it early, a pipe cannot split a table cell."""
    return "`" + one_line(text).replace("`", "'").replace("|", "\\|") + "`"
