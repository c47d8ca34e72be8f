"""`python -m desktop_qualify.consumer`: the consumer's `verify` and `audit` commands."""

import sys

from ._cli import main

sys.exit(main())
