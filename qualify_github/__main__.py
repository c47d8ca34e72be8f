"""`python -m desktop_qualify.qualify_github`: store statements as GitHub attestations."""

from ._cli import main

raise SystemExit(main())
