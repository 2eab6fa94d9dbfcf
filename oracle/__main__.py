"""``python -m oracle`` runs the CLI."""

import sys

from oracle.cli.main import main

sys.exit(main())
