"""`python -m desktop_qualify.aggregate`: `qualify aggregate`."""

import sys

from ._cli import main

sys.exit(main())
