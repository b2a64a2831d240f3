"""``python -m chronomem``: the command line (same as the ``chronomem`` script)."""

from chronomem.adapters.cli import main

raise SystemExit(main())
