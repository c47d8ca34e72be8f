"""Qt Notes' journey, driven from outside the app: each step starts the installed executable and checks its work.

    python journey/run.py --executable PATH --record PATH

The pipeline runs this from the exported source of the gated commit, after
re-hashing the installed tree, with the display the policy asks for (DISPLAY
under Xvfb, or QT_QPA_PLATFORM=offscreen). Each step records what happened
(``allow``, ``reject`` with the app's code, or ``error`` when the step could
not be carried out or what it saw was wrong), never what was expected: the
policy's ``[journey.steps]`` table judges. The runner does not take the app's
word for a success: it reads the saved note back from disk, and checks the
screenshot's PNG header and size itself. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import tempfile
from pathlib import Path

TIMEOUT = 60
Step = dict[str, object]


def _run(executable: str, *args: str) -> tuple[int, dict[str, object]]:
    done = subprocess.run([executable, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    try:
        said = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        said = {}
    if not said and done.returncode != 0:
        said = {"message": done.stderr.strip()[-300:]}
    return done.returncode, said


def _observed(step_id: str, code: int, said: dict[str, object], *, confirmed: bool = True, why: str = "") -> Step:
    """What the app did: exit 0 is an allow (if the runner confirmed it), exit 3 a refusal with the app's code."""
    if code == 0 and confirmed:
        return {"id": step_id, "observed": "allow", "code": None, "errno": None, "detail": str(said.get("status", ""))}
    if code == 3 and isinstance(said.get("code"), str):
        return {"id": step_id, "observed": "reject", "code": said["code"], "errno": None,
                "detail": str(said.get("message", ""))[:400]}
    return {"id": step_id, "observed": "error", "code": None, "errno": None,
            "detail": (why or f"exit {code}: {said.get('message', '')}")[:400]}


def _png_size(path: Path) -> tuple[int, int] | None:
    try:
        head = path.read_bytes()[:24]
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def journey(executable: str, work: Path) -> list[Step]:
    notebook = work / "notebook"
    notebook.mkdir()
    steps: list[Step] = []
    text = "Shopping: eggs, flour, Grüße\n"
    source = work / "typed.txt"
    source.write_text(text, encoding="utf-8")

    code, said = _run(executable, "save", str(notebook), "list.txt", "--text-file", str(source))
    on_disk = (notebook / "list.txt").read_text(encoding="utf-8") if (notebook / "list.txt").is_file() else None
    steps.append(_observed("save-note", code, said, confirmed=on_disk == text,
                           why=f"the app said {said!r}, and the file holds {on_disk!r}"))

    shot = work / "window.png"
    code, said = _run(executable, "open", str(notebook), "list.txt", "--screenshot", str(shot))
    size = _png_size(shot)
    drawn = size is not None and size == (said.get("width"), said.get("height")) and said.get("drawn") is True
    steps.append(_observed("open-note-renders-window", code, said,
                           confirmed=drawn and said.get("characters") == len(text),
                           why=f"screenshot {size}, the app said {said!r}"))

    (notebook / "huge.txt").write_bytes(b"x" * (256 * 1024 + 1))
    steps.append(_observed("open-too-large-refused", *_run(executable, "open", str(notebook), "huge.txt")))

    (notebook / "latin1.txt").write_bytes("café".encode("latin-1"))
    steps.append(_observed("open-not-utf8-refused", *_run(executable, "open", str(notebook), "latin1.txt")))

    escape = work / "escaped.txt"
    code, said = _run(executable, "save", str(notebook), "../escaped.txt", "--text-file", str(source))
    steps.append(_observed("save-outside-notebook-refused", code, said, confirmed=not escape.exists()))
    if escape.exists():  # the app claimed a refusal, yet wrote the file: that is not a refusal
        steps[-1] = {"id": "save-outside-notebook-refused", "observed": "error", "code": None, "errno": None,
                     "detail": "a file was written outside the notebook"}

    code, said = _run(executable, "open", str(notebook), "missing.txt")
    steps.append(_observed("open-missing-refused", code, said))
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(prog="journey/run.py")
    parser.add_argument("--executable", required=True)
    parser.add_argument("--record", required=True, type=Path)
    args = parser.parse_args()
    code, about = _run(args.executable, "about")
    if code != 0:
        raise SystemExit(f"journey: the app cannot say what it is (exit {code}): {about}")
    with tempfile.TemporaryDirectory(prefix="qt-notes-journey-") as work:
        steps = journey(args.executable, Path(work))
    record = {"kind": "qualify-journey", "version": 2, "app_version": about["app_version"],
              "build_sha": about["build_sha"], "platform": about["platform"], "steps": steps}
    args.record.write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    for step in steps:
        print(f"journey: {step['id']}: {step['observed']} {step['code'] or ''}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
