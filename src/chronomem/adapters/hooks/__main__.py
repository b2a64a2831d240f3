"""``python -m chronomem.adapters.hooks [GLOBAL OPTIONS] hook claude-code``:
the hook without the click command line (see :mod:`.entry`)."""

from .entry import main

raise SystemExit(main())
