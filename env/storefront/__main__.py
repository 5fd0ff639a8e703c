"""``python -m vismem.env.storefront``: serve the shop (see :mod:`vismem.env.storefront.server`)."""

import sys

from vismem.env.storefront.server import main

sys.exit(main())
