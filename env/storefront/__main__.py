"""``python -m env.storefront``: serve the shop (see :mod:`env.storefront.server`)."""

import sys

from env.storefront.server import main

sys.exit(main())
