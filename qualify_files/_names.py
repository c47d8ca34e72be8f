"""How the file systems a bundle lands on open and compare names."""

from __future__ import annotations

import os
import unicodedata

# Open flags for reading a file that must not be a link (refused with OSError where the platform can) and must
# not be newline-translated (Windows).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def casefold_name(name: str) -> str:
    """A name as a case-insensitive, normalising file system compares it.

    Unicode's canonical caseless match (NFD of the case fold of NFD): it equates
    at least the spellings APFS and HFS+ (case and normalisation) and NTFS (case)
    treat as one name.
    """
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())
