"""``python -m hpa`` is the ``hpa`` console script."""

from hpa.cli import main

raise SystemExit(main())
