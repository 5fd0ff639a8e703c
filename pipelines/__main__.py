import sys

from vismem.pipelines.cli import main

sys.exit(main())
