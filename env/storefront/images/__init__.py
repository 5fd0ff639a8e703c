"""Product images for the storefront: procedural renderer, cue glyphs, image sources.

Its modules are the ``image_source`` registry's built-in package: the registry
(:data:`vismem.env.storefront.imagesource.IMAGE_SOURCES`) imports every one on first lookup, so
``procedural`` and ``official`` (``sources``) register without an import here (``store`` and
``placeholder`` live beside the registry). Import what you need from its modules:
``scene`` (the procedural renderer), ``glyphs``, ``colors``, ``sources``, ``trainset``.
"""
