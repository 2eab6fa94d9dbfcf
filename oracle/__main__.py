"""``python -m oracle`` runs the CLI."""

import sys

from oracle.cli import main

sys.exit(main())
