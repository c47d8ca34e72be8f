"""Qt Notes' command line: the GUI, driven by the commands a test runner (or a person) gives it.

    qt-notes about                                   version, build and platform, one JSON line
    qt-notes probe --record PATH                     the qualify-probe v2 record (docs/app-contract.md)
    qt-notes open NOTEBOOK NAME [--screenshot PNG]   open a note in the editor window, optionally saved as a picture
    qt-notes save NOTEBOOK NAME --text-file FILE     type FILE's text into the editor and press Save

Every command prints one JSON line; a refusal exits 3 with the app's own code
(``NOTES_*``), a usage error exits 2. The window is real: it is drawn by the
Qt platform the environment names (xcb under Xvfb, offscreen, or a desktop).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from . import __version__
from .build_info import build_info
from .notebook import NotesError
from .probe import probe as write_probe_record
from .window import NotesWindow, image_is_drawn


def _say(payload: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


def _application() -> QApplication:
    existing = QApplication.instance()
    return existing if isinstance(existing, QApplication) else QApplication(["qt-notes"])


def _open(args: argparse.Namespace) -> int:
    _application()
    window = NotesWindow(Path(args.notebook))
    window.show()
    try:
        window.open_note(args.name)
    except NotesError as exc:
        _say({"ok": False, "code": exc.code, "message": exc.message})
        return 3
    image = window.render_window()
    if args.screenshot and not image.save(args.screenshot):
        _say({"ok": False, "code": "NOTES_SCREENSHOT_FAILED", "message": "the window could not be saved"})
        return 3
    _say({"ok": True, "characters": len(window.editor.toPlainText()), "drawn": image_is_drawn(image),
          "width": image.width(), "height": image.height(), "status": window.status.text()})
    return 0


def _save(args: argparse.Namespace) -> int:
    _application()
    window = NotesWindow(Path(args.notebook))
    window.show()
    window.name = args.name
    text = Path(args.text_file).read_text(encoding="utf-8")
    window.editor.setFocus()
    for char in text:  # typed, key by key, as a person would; what no key makes is entered as an input method would
        if char == "\n":
            QTest.keyClick(window.editor, Qt.Key.Key_Return)
        elif char.isascii() and char.isprintable():
            QTest.keyClicks(window.editor, char)
        else:
            window.editor.insertPlainText(char)
    window.save_action.trigger()
    if window.last_error is not None:
        _say({"ok": False, "code": window.last_error.code, "message": window.last_error.message})
        return 3
    _say({"ok": True, "status": window.status.text()})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qt-notes")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("about")
    probe_command = commands.add_parser("probe")
    probe_command.add_argument("--record", required=True)
    opened = commands.add_parser("open")
    opened.add_argument("notebook")
    opened.add_argument("name")
    opened.add_argument("--screenshot", help="a .png file: the format follows the name")
    saved = commands.add_parser("save")
    saved.add_argument("notebook")
    saved.add_argument("name")
    saved.add_argument("--text-file", required=True)
    args = parser.parse_args(argv)
    if args.command == "about":
        info = build_info()
        _say({"app_version": __version__, "build_sha": info["build_sha"], "platform": info["platform"]})
        return 0
    if args.command == "probe":
        _application()
        return write_probe_record(Path(args.record))
    return _open(args) if args.command == "open" else _save(args)


if __name__ == "__main__":
    raise SystemExit(main())
