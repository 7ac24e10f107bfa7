"""`python -m benchhub_agent`, where the benchhub-agent script is not on PATH."""

import sys

from .cli import main

sys.exit(main())
