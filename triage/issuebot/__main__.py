"""``python -m triage.issuebot``."""

import sys

from triage.issuebot.cli import main

sys.exit(main())
