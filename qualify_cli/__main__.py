"""`python -m desktop_qualify.qualify_cli`: the `qualify` command."""

import sys

from ._main import main

sys.exit(main())
