"""``python -m vismem``: the vismem CLI (same as the ``vismem`` command)."""

from vismem.pipelines.cli import main

raise SystemExit(main())
