"""Built-in VLM backends: each module registers into ``vismem.serve.registry.VLMS``, which imports
every module here on first lookup.

Heavy dependencies (torch, transformers) are imported inside the backends, not at import.
"""
