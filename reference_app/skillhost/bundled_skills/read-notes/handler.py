"""Bundled skill: summarise a text file in the workspace. Filesystem broker only."""


def run(ports, args):
    text = ports.fs.read_text(str(args.get("path", "notes.txt"))[:200])
    lines = text.splitlines()
    return {"lines": len(lines), "first": lines[0][:80] if lines else ""}
