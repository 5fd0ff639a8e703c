"""Model backends behind small protocols (VLM, Embedder) and the Ray Serve apps that host them.

Build components from ``{"name", "args"}`` specs with :func:`build_vlm` / :func:`build_embedder`,
or from a named model spec YAML with :func:`serve.models.load_model_spec`.
"""

from serve.embed import EMBEDDERS, Embedder, build_embedder, embed_queries, l2_normalise
from serve.vlm import VLMS, VLM, ChatResult, Message, VLMError, build_vlm

# Register the built-in backends so ``VLMS.build`` / ``EMBEDDERS.build`` resolve them from any
# import path. Both packages are light: torch/transformers load only when a model is built.
from serve import backends as _backends, embedders as _embedders  # noqa: E402,F401  isort: skip

__all__ = ["VLM", "VLMS", "Message", "ChatResult", "VLMError", "build_vlm",
           "Embedder", "EMBEDDERS", "build_embedder", "embed_queries", "l2_normalise"]
