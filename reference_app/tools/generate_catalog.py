"""Generate or check reference_app/skillhost/capability_catalog.json.

Audits every bundled handler with ``ast`` (host ports called -> capabilities,
raw modules imported) and writes the catalog with stable bytes.

    python reference_app/tools/generate_catalog.py            # write
    python reference_app/tools/generate_catalog.py --check    # exit 1 on drift
    ... --package-dir DIR   # operate on another copy of the skillhost package
"""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))

from skillhost.packaging import CATALOG_NAME, generate, render  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on drift")
    ap.add_argument("--package-dir", default=str(_HERE.parent / "skillhost"))
    ns = ap.parse_args(argv)
    pkg = Path(ns.package_dir)
    catalog, problems = generate(pkg)
    for p in problems:
        print(f"audit: {p}", file=sys.stderr)
    if problems:
        return 1
    data = render(catalog)
    target = pkg / CATALOG_NAME
    if ns.check:
        current = target.read_bytes() if target.is_file() else b""
        if current != data:
            print(f"drift: {target} is not what the generator produces; regenerate it", file=sys.stderr)
            return 1
        print(f"ok: {target} matches ({len(catalog['skills'])} skills)")
        return 0
    target.write_bytes(data)
    print(f"wrote {target} ({len(catalog['skills'])} skills)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
