"""`python -m inbox`: the same as the `inbox` command."""

import sys

from inbox._cli import main

sys.exit(main())
