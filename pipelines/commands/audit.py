"""``vismem audit``: the L2-leakage audit of the DMV-Bench storefront.

Starts the shop in-process on loopback (or audits a running one with ``--url``), crawls every
page over HTTP, scans every user-visible field for the cue vocabulary and the fine-descriptor
list, checks the cue bijection, prints a summary and exits 1 on any hit or dead link.
"""

from __future__ import annotations

import argparse

PAPER_FIELDS = 13_140


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="L2-leakage audit of the storefront",
                       description="Crawl the storefront and prove that no text channel carries a cue "
                       "colour, cue object, cue head noun or fine descriptor; check the cue bijection.")
    p.add_argument("--data-dir", metavar="DIR", help="shared data dir (default: the run config's data_dir)")
    p.add_argument("--seed", type=int, default=0, help="run seed (colour permutation); default 0")
    p.add_argument("--colour-order", choices=("seeded", "official"), default="seeded",
                   help="cue colour assignment (default: seeded)")
    p.add_argument("--url", metavar="URL", help="audit an already running shop at URL instead of starting one")
    p.add_argument("--out", metavar="FILE.json", help="write the full report as JSON")
    p.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    import json
    import sys

    from vismem.env.storefront.audit import crawl_and_audit
    from vismem.env.storefront.catalog import dmv_dir, load_catalog
    from vismem.env.storefront.server import ShopServer
    from vismem.env.storefront.imagesource import build_image_source

    if args.data_dir:
        data_dir = args.data_dir
    else:
        from vismem.pipelines.config import load_config
        from vismem.pipelines.context import resolve_data_dir

        data_dir = resolve_data_dir(load_config(None))
    catalog = load_catalog(data_dir, seed=args.seed, colour_order=args.colour_order)
    seed_doc = json.loads((dmv_dir(data_dir) / "seed_v2.json").read_text(encoding="utf-8"))
    if args.url:
        rep = crawl_and_audit(args.url.rstrip("/"), catalog, seed_doc=seed_doc)
    else:
        # Text is what is audited, so the cheap placeholder images suffice.
        with ShopServer(catalog, build_image_source("placeholder", catalog)) as shop:
            rep = crawl_and_audit(shop.url, catalog, seed_doc=seed_doc)
    d = rep.to_dict()
    print(f"pages crawled        {rep.pages}")
    print(f"fields scanned       {rep.fields_scanned}  ({rep.unique_fields} distinct; by kind {rep.fields_by_kind})")
    print(f"catalogue fields     {rep.catalog_fields}  (paper: {PAPER_FIELDS:,} catalogue text fields)")
    print(f"products reached     {rep.products_reached}/{rep.products_total}")
    print(f"hits                 {len(rep.hits)} in pages, {len(rep.catalog_hits)} in catalogue records "
          f"{rep.hits_by_class or ''}")
    print(f"dead links           {len(rep.broken_links)}")
    print(f"cue bijection        {'ok' if not rep.bijection_problems else rep.bijection_problems}")
    for h in (rep.hits + rep.catalog_hits)[:20]:
        print(f"  HIT {h}", file=sys.stderr)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(d, fh, indent=2)
    print("L2 audit PASSED" if rep.ok else "L2 audit FAILED")
    return 0 if rep.ok else 1
