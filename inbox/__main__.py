"""`python -m inbox`: the same as the `inbox` command."""

import sys

from inbox._cli.main import main

sys.exit(main())
