"""Bundled skill: count changes in the workspace repository. Process broker only."""


def run(ports, args):
    res = ports.process.run(["git", "status", "--porcelain"])
    changes = [line for line in res["stdout"].splitlines() if line.strip()]
    return {"command": res["command"], "returncode": res["returncode"], "changes": len(changes)}
