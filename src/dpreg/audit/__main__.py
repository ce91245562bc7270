"""``python -m dpreg.audit``: the audit's command line."""

import sys

from dpreg.audit.cli import main

sys.exit(main())
