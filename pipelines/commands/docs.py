"""``vismem docs``: regenerate the reference pages, build the docs site (strict) and serve it
on 127.0.0.1.

The configuration and CLI references are generated from the code (``pipelines/docsgen.py``)
before every build, so the site never shows a stale one; ``--check`` only reports stale pages
and a failing build (what the test suite checks) and writes nothing.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("docs", help="build the docs site and serve it on 127.0.0.1",
                       description="Regenerate the configuration and CLI references from the code, build the "
                       "docs site from docs/ with MkDocs in strict mode and serve it on 127.0.0.1.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--build", action="store_true", help="build into --site and exit (no server)")
    mode.add_argument("--write", action="store_true", help="only regenerate the reference pages")
    mode.add_argument("--check", action="store_true",
                      help="exit 1 when a generated page is stale or the strict build fails; writes nothing in docs/")
    p.add_argument("--site", metavar="DIR", help="where the site is built (default: site/ in the checkout)")
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000; 0 picks a free one)")
    p.set_defaults(func=_docs)


def _docs(args: argparse.Namespace) -> int:
    import sys
    import tempfile
    from pathlib import Path

    from vismem.pipelines import docsgen

    root = docsgen.docs_root()
    if args.check:
        stale = docsgen.stale_pages(root / "docs")
        for rel in stale:
            print(f"stale generated page: docs/{rel} (run `vismem docs --write`)", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="vismem-site-") as tmp:
            code, log = docsgen.build_site(Path(tmp), root=root)
        if code:
            print(log, file=sys.stderr)
        return 1 if stale or code else 0
    for rel in docsgen.write_pages(root / "docs"):
        print(f"regenerated docs/{rel}")
    if args.write:
        return 0
    site = Path(args.site).resolve() if args.site else root / "site"
    code, log = docsgen.build_site(site, root=root)
    if code:
        print(log, file=sys.stderr)
        return 1
    print(f"built {site}")
    return 0 if args.build else _serve(site, args.port)


def make_server(site, port: int):
    """An HTTP server of the built ``site`` bound to 127.0.0.1 only (never the network)."""
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    return ThreadingHTTPServer(("127.0.0.1", port), handler)


def _serve(site, port: int) -> int:
    """Serve ``site`` until Ctrl-C."""
    from vismem.core.errors import ConfigError

    try:
        server = make_server(site, port)
    except OSError as err:  # a taken port is a one-line answer, not a traceback
        raise ConfigError(f"cannot serve the docs on 127.0.0.1:{port} ({err.strerror}); pick another --port") from err
    with server:
        print(f"serving http://127.0.0.1:{server.server_address[1]}/index.html (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0
