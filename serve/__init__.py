"""Model backends behind small protocols (VLM, Embedder) and the Ray Serve apps that host them.

The modules, from the ground up (each imports only those above it in this list):

- :mod:`~vismem.serve.vlm`, :mod:`~vismem.serve.embed`: the protocols and their message types;
- :mod:`~vismem.serve.models`: the model catalogue (``serve/models/*.yaml``: load and validate);
- :mod:`~vismem.serve.hosting`, :mod:`~vismem.serve.deployed`: how Serve hosts a model, and how
  runs reach a deployed one (``deployed:NAME``);
- :mod:`~vismem.serve.registry`: :data:`VLMS` and :data:`EMBEDDERS`;
- :mod:`~vismem.serve.build`: ``build_vlm``, ``build_embedder``, ``build_model`` (a named variant);
- :mod:`~vismem.serve.deploy`, :mod:`~vismem.serve.apps`: Serve config files and applications.

The project's public face (``vismem.build_vlm``, ``vismem.build_embedder``) points into these.
"""
