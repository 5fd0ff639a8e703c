"""Built-in embedders; importing this package registers them in ``serve.embed.EMBEDDERS``.

torch / transformers / sentence-transformers are imported lazily inside each backend.
"""

from serve.embedders import dual, http, jina, minilm, ocr, pocket, qwen3vl  # noqa: F401
