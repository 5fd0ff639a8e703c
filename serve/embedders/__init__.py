"""Built-in embedders: each module registers into ``vismem.serve.registry.EMBEDDERS``, which imports
every module here on first lookup.

torch / transformers / sentence-transformers are imported lazily inside each backend.
"""
