"""Qualification bundles: one run's evidence, policy and trust root in one release asset an auditor can check offline.

``write_bundle`` packs a run; ``open_bundle`` checks a bundle whole in memory
(caps, names, the manifest's every digest) and only then writes it into a fresh
private folder, laid out as a small checkout: the policy under ``policies/``,
its trust material where the policy's own relative paths find it, and the
statements under ``evidence/``. The bundle's policy and trust root are the ones
an audit then uses, so an old run is judged under its own rules.
"""

from ._limits import BUNDLE_SUFFIX, MAX_ARCHIVE_BYTES
from ._read import OpenedBundle, open_bundle
from ._write import write_bundle

__all__ = ["BUNDLE_SUFFIX", "MAX_ARCHIVE_BYTES", "OpenedBundle", "open_bundle", "write_bundle"]
