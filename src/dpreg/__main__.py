"""``python -m dpreg <command>``: the same as the ``dpreg`` console script."""

import sys

from dpreg.cli import main

sys.exit(main())
