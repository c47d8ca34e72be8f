"""`python -m desktop_qualify.qualify_sigstore_conformance`: the `qualify-sigstore-conformance` command."""

import sys

from ._cli import main

sys.exit(main())
