"""Vocabulary data files of the L2 audit (a package only so that setuptools ships the files)."""
