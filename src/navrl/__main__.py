"""``python -m navrl``: the ``navrl`` command line."""
from navrl.cli.main import main

raise SystemExit(main())
