"""The notebook: a folder of UTF-8 notes, and the refusals the app names with its own codes."""

from __future__ import annotations

import re
from pathlib import Path

MAX_NOTE_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}\.txt$")


class NotesError(Exception):
    """A refusal: a stable code of the app's own and a message for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def note_path(notebook: Path, name: str) -> Path:
    """The note's file, refusing any name that is not a plain file name inside the notebook."""
    if not _NAME.match(name) or ".." in name:
        raise NotesError("NOTES_PATH_OUTSIDE_NOTEBOOK", f"{name[:80]!r} is not a note name inside the notebook")
    return notebook / name


def read_note(notebook: Path, name: str) -> str:
    path = note_path(notebook, name)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise NotesError("NOTES_NOT_FOUND", f"no note named {name!r}") from None
    if size > MAX_NOTE_BYTES:
        raise NotesError("NOTES_FILE_TOO_LARGE", f"{name!r} is {size} bytes; a note holds at most {MAX_NOTE_BYTES}")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise NotesError("NOTES_NOT_UTF8", f"{name!r} is not UTF-8 text") from None


def write_note(notebook: Path, name: str, text: str) -> int:
    path = note_path(notebook, name)
    data = text.encode("utf-8")
    if len(data) > MAX_NOTE_BYTES:
        raise NotesError("NOTES_FILE_TOO_LARGE", f"the note is {len(data)} bytes; at most {MAX_NOTE_BYTES}")
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)  # a reader never sees half a note
    return len(data)
