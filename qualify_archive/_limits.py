"""Caps and fixed values of the archive format: what a bundle may hold, and the tar layout.

Read as ``limits.NAME`` at call time by the other modules, so there is one value to change.
"""

from __future__ import annotations

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 2 * 1024**3
MAX_LINK_TARGET = 1024
# evidence_schemas.RelPath: a manifest path holds at most 512 characters, so a longer name could not be recorded.
MAX_NAME_CHARS = 512
# Extended headers (pax records, GNU long names) in front of one member, and in the whole archive, in bytes of
# whole blocks: tarfile reads each whole into memory and keeps every member's pax records while it streams.
MAX_EXTENDED_HEADER = 64 * 1024
MAX_EXTENDED_TOTAL = 32 * 1024**2
MAX_PAX_RECORDS = 16
# Fixed mtime so that the archive's bytes depend on its content, not the clock.
EPOCH = 1_700_000_000
# Deflate level of a packed bundle (gzip and zip alike). Level 1 packs the reference app's 55 MB bundle in about
# 0.7 s against level 9's 8 s, for an archive 8% larger: the level-9 squeeze was half the build's time, and the
# archive is a CI artifact and a download, not something kept in bulk. Same content, same bytes, at any level.
DEFLATE_LEVEL = 1

BLOCK = 512  # the tar format's block
# tarfile's stream buffer, passed explicitly: it never asks for, nor reads ahead, more than this at a time.
RECORD = 20 * BLOCK
# Per member, beyond its data: its own header block, padding, a pax record for a long path.
MEMBER_OVERHEAD = 8 * BLOCK
# pax (POSIX, and Solaris' early form) and GNU long name / long link: headers that announce more header.
EXTENDED_TYPES = frozenset({b"x", b"X", b"L", b"K"})
# A bundle never holds these, and tarfile would act on them before the caller could refuse the member.
REFUSED_TYPES = {b"g": "a pax global header (it applies to every later member)",
                  b"S": "a GNU sparse file (its map is read as a header)"}
# Control characters (C0, C1, DEL), format characters (bidi overrides; the zero-width joiners HFS+ ignores in
# names) and line or paragraph separators: a name holding one can pass for another in a log or on disk.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
