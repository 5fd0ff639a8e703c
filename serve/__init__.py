"""Model backends behind small protocols (VLM, Embedder) and the Ray Serve apps that host them.

Build components from ``{"name", "args"}`` specs with :func:`build_vlm` / :func:`build_embedder`,
or from a named model spec YAML with :func:`vismem.serve.models.load_model_spec`.
"""

from vismem.serve.embed import EMBEDDERS, Embedder, build_embedder, embed_queries, l2_normalise
from vismem.serve.vlm import VLMS, VLM, ChatResult, Message, VLMError, build_vlm

__all__ = ["VLM", "VLMS", "Message", "ChatResult", "VLMError", "build_vlm",
           "Embedder", "EMBEDDERS", "build_embedder", "embed_queries", "l2_normalise"]
