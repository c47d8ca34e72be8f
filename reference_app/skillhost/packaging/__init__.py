"""Skill packages: the manifest, the lock and its signature, the bundled-skill catalog, the external-source audit.

What the host trusts a skill with is decided here, before any of its code runs:
a bundled skill must match the generated catalog (``verify_catalog``,
``check_entry``); an external one must be a valid package (``discover``) whose
signed lock still matches its files (``verify_for_execution`` gives the
``VerifiedSkill`` the worker runs). Every external package read arms the
host-boundary trap (``boundary_violations``): its code compiled, executed or
imported in this process is recorded as it happens.
"""

from skillhost.packaging._boundary_trap import HANDLER_FILENAME
from skillhost.packaging._boundary_trap import installed as boundary_trap_installed
from skillhost.packaging._boundary_trap import violations as boundary_violations
from skillhost.packaging._catalog import (
    ALLOWED_IMPORTS,
    CATALOG_NAME,
    check_entry,
    generate,
    list_bundled,
    render,
)
from skillhost.packaging._catalog import verify as verify_catalog
from skillhost.packaging._manifest import ENTRY_POINT, KNOWN_CAPABILITIES, PORT_CAPABILITY, SKILL_ID_RE
from skillhost.packaging._package import (
    VerifiedSkill,
    build_lock,
    discover,
    read_package,
    sign_package,
    verify_for_execution,
)
from skillhost.packaging._signing import (
    LOCK_NAME,
    SIG_NAME,
    TrustStore,
    keyid_of,
    load_private_key,
    new_key,
    raw_public,
    sign_lock,
    write_private_key,
)

__all__ = [
    "ALLOWED_IMPORTS", "CATALOG_NAME", "ENTRY_POINT", "HANDLER_FILENAME", "KNOWN_CAPABILITIES", "LOCK_NAME",
    "PORT_CAPABILITY",
    "SIG_NAME", "SKILL_ID_RE", "TrustStore", "VerifiedSkill", "boundary_trap_installed",
    "boundary_violations", "build_lock", "check_entry", "discover", "generate",
    "keyid_of", "list_bundled", "load_private_key", "new_key", "raw_public", "read_package", "render", "sign_lock",
    "sign_package", "verify_catalog", "verify_for_execution", "write_private_key",
]  # fmt: skip
