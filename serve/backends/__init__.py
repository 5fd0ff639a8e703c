"""Built-in VLM backends; importing this package registers them in ``serve.vlm.VLMS``.

Heavy dependencies (torch, transformers) are imported inside the backends, not here.
"""

from serve.backends import openai, scripted, transformers_vlm  # noqa: F401
