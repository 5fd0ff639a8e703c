"""The built-in memory architecture families; each module registers into ``ARCHITECTURES``
(the registry imports every module here on first lookup)."""
