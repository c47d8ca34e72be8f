"""`python -m desktop_qualify.producer`: `qualify produce`."""

import sys

from ._cli import main

sys.exit(main())
