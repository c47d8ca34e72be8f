"""File handling every stage shares: atomic writes, appends to shared files, streamed digests, names,
and the staging folder a whole run's output is swapped in from.

Kept out of ``evidence_schemas``, which is pure data (docs/design.md §6.1).
"""

from ._atomic import append_text, atomic_leftovers, discard_leftovers, remove_output, write_atomic
from ._digest import file_sha256
from ._names import NOFOLLOW, casefold_name
from ._outputs import STDOUT, is_stdout, write_output
from ._staging import staging_folder, swap_into_place

__all__ = [
    "STDOUT",
    "NOFOLLOW",
    "append_text",
    "atomic_leftovers",
    "casefold_name",
    "discard_leftovers",
    "file_sha256",
    "is_stdout",
    "remove_output",
    "staging_folder",
    "swap_into_place",
    "write_atomic",
    "write_output",
]
