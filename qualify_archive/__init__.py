"""The bundle as one archive, and a folder as a manifest: shared by the producer's build, install and probe.

Extraction refuses what a hostile or damaged archive could use to escape the
install prefix or to exhaust the machine: absolute names, ".." segments, hard
links, devices, fifos, sizes or counts beyond the caps, names an install
manifest cannot record (not UTF-8, control characters, too long), and names
that alias one another on a case-insensitive or normalising file system (APFS,
HFS+, NTFS). Permissions come from the archive, stripped of set-id bits;
nothing else is trusted. The prefix is created by ``unpack`` and must not exist
before; any refusal after writing began removes it whole, so a refused archive
leaves nothing behind.

Symbolic links: PyInstaller's macOS bundles hold relative links into
themselves (framework and ``.dylib`` aliases), so a tar archive may carry a
link whose target is relative and stays inside the bundle's top folder,
checked lexically and again after resolving, at pack and at unpack. Links are
created only after every regular file is written, each in a folder the unpack
itself made (checked with ``lstat``; no folder is ever made for a link), so
nothing is ever written through one. zip (Windows) carries no links at all.

A folder's manifest (``tree_manifest``) never follows a link: a link is
recorded by its target text, so a manifest entry names exactly one thing.

Installer tools that extract themselves (``unsquashfs``, ``hdiutil``...)
are held to the same rules: ``audit_tree`` checks what the tool wrote
(``_audit``). A Debian package's data tar is not handed to a tool at all:
``audit_tar_listing`` checks its whole listing, nothing written, then
``unpack_package_tar`` writes it under the same rules (links confined to the
installed tree rather than a top folder), so the one parser that checked the
members is the one that writes them. Every tar header is held to one spelling
of its numbers (plain octal or GNU base-256) and a matching checksum.

Layout: ``_pack`` and ``_unpack`` (with ``_tar``, ``_zip`` and the per-member
``_members``), the rules they share in ``_names`` and ``_links``, the caps in
``_limits``, the folder walk and manifest in ``_tree``, and ``git archive`` of the app's committed source
with its digest in ``_git_source``; where two builds' archives first differ in ``_compare``.
"""

from ._audit import audit_tree
from ._compare import first_difference
from ._git_source import (
    app_relative_path,
    commit_epoch,
    committed_source_digest,
    export_committed_tree,
    tree_sha256,
)
from ._limits import MAX_MEMBERS, MAX_UNPACKED_BYTES
from ._pack import pack
from ._tar import audit_tar_listing, unpack_package_tar
from ._tree import TreeEntry, manifest_sha256, read_link, tree_manifest, walk_tree
from ._unpack import unpack

__all__ = [
    "MAX_MEMBERS", "MAX_UNPACKED_BYTES", "TreeEntry", "app_relative_path", "audit_tar_listing", "audit_tree",
    "commit_epoch", "committed_source_digest", "export_committed_tree", "first_difference",
    "manifest_sha256", "pack", "read_link", "tree_manifest", "tree_sha256", "unpack", "unpack_package_tar",
    "walk_tree",
]
