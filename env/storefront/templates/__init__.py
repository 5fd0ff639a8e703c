"""Jinja2 templates of the storefront (a package only so that setuptools ships the files)."""
