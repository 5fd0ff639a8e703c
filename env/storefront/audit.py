"""The L2-leakage audit: crawl the running shop over HTTP and scan every user-visible field.

Fields are what a user (or a text-reading agent) can see on a page: every visible text node,
the ``<title>``, ``alt``/``title``/``aria-label``/``placeholder`` attributes, button/input
values, ``<meta>`` contents, and every link URL (``href``, ``src``, form ``action``). Scripts and
styles are not fields. Each field is scanned with :class:`vismem.env.storefront.leakage.Vocabulary`
for cue colours, full cue phrases, cue head nouns and the 82 fine descriptors (style slugs in
collection URLs exempt). The crawl follows every same-origin link from ``/`` plus the pages
reachable only by form (search, a filled wishlist/cart, checkout, a 404 page), and fails on any
dead link. The report also re-checks the catalogue's cue bijection and that every product page
was reached.

Field counts versus the paper's 13,140. The paper's number matches a count of catalogue
*records*, not of rendered pages: ``seed_v2.json`` has exactly 13,000 string fields on its 1,000
variants (13 each) plus 40 on its 10 categories (4 each), and 13,140 - 13,040 = 100 is one field
per collection or product (most likely the display name). :func:`audit_catalog_records` scans
every string field of the file (14,140: all 5 of each collection and 6 of each product too).
The crawl counts every field *occurrence* on every served page (~169,000 on ~1,118 pages,
~9,200 distinct), because the same name appears in a card, an alt text, a breadcrumb, a meta
description and the recently-viewed strip, and each is a channel a text memory could read.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin, urlsplit

from vismem.env.storefront.catalog import COLOURS, Catalog
from vismem.env.storefront.leakage import Hit, Vocabulary, strip_style_slug

TEXT_ATTRS = {"alt", "title", "aria-label", "placeholder"}
URL_ATTRS = {"href", "src", "action", "srcset", "poster"}
SKIP_TAGS = {"script", "style", "noscript", "template"}


@dataclass(frozen=True)
class Field:
    page: str
    kind: str     # text | title | attr:<name> | meta:<name> | url:<attr>
    value: str


class _Extractor(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.fields: list[Field] = []
        self.links: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIP_TAGS:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        a = {k: v for k, v in attrs if v is not None}
        for k, v in a.items():
            if not v.strip():
                continue
            if k in TEXT_ATTRS:
                self.fields.append(Field(self.page, f"attr:{k}", v))
            elif k in URL_ATTRS:
                self.fields.append(Field(self.page, f"url:{k}", v))
                if tag == "a" and k == "href":
                    self.links.append(v)
        if tag == "meta" and a.get("content", "").strip():
            name = a.get("name") or a.get("property") or a.get("http-equiv") or "?"
            if name.lower() not in ("viewport",) and "charset" not in a:
                self.fields.append(Field(self.page, f"meta:{name}", a["content"]))
        if tag in ("input", "button") and a.get("type") != "hidden" and a.get("value", "").strip():
            self.fields.append(Field(self.page, "attr:value", a["value"]))

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_TAGS and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._skip or not data.strip():
            return
        self.fields.append(Field(self.page, "title" if self._in_title else "text", " ".join(data.split())))


def extract_fields(html: str, page: str) -> tuple[list[Field], list[str]]:
    """All user-visible fields of a page and its ``<a href>`` links (pure)."""
    p = _Extractor(page)
    p.feed(html)
    p.close()
    return p.fields, p.links


def scan_field(kind: str, value: str, vocab: Vocabulary, styles: set[str]) -> list[Hit]:
    """Vocabulary hits in one field; URL fields get the style-slug exception (fine list only)."""
    if kind.startswith("url:"):
        return (vocab.scan(unquote(value), ("colour", "phrase", "head"))
                + vocab.scan(strip_style_slug(value, styles), ("fine",)))
    return vocab.scan(value)


def scan_fields(fields: list[Field], vocab: Vocabulary, styles: set[str],
                cache: dict | None = None) -> list[tuple[Field, Hit]]:
    """Vocabulary hits in fields. Pages repeat most fields (header, cards), so results are
    cached per (kind class, value); every occurrence still counts as scanned and as a hit."""
    cache = {} if cache is None else cache
    out = []
    for f in fields:
        key = (f.kind.startswith("url:"), f.value)
        hits = cache.get(key)
        if hits is None:
            hits = cache[key] = scan_field(f.kind, f.value, vocab, styles)
        out.extend((f, h) for h in hits)
    return out


def check_bijection(catalog: Catalog) -> list[str]:
    """Problems with the cue map (empty when it is a bijection onto the products)."""
    problems = []
    cues = Counter((v.cue_object, v.cue_color) for v in catalog.variants)
    objs = {v.cue_object for v in catalog.variants}
    if len(catalog.by_hash) != len(catalog.variants):
        problems.append("duplicate url hashes")
    dup = [c for c, n in cues.items() if n > 1]
    if dup:
        problems.append(f"{len(dup)} cues shared by several products, e.g. {dup[0]}")
    if len(cues) != len(objs) * len(COLOURS):
        problems.append(f"{len(cues)} cues != {len(objs)} objects x {len(COLOURS)} colours")
    return problems


#: Catalogue fields a user can read (names, descriptions, alt text): scanned for everything.
DISPLAY_KEYS = {"display", "description", "displayName", "baseName", "baseDesc", "longDesc",
                "material", "title", "altText", "colorName"}


def audit_catalog_records(seed_doc: dict, vocab: Vocabulary) -> tuple[int, list[dict]]:
    """Scan every string field of the catalogue file itself (cue fields ``_cue_*`` excepted).

    Identifier fields (ids, slugs, image paths) legitimately carry style names, so they are
    scanned for the cue vocabulary only; display fields are scanned for the fine list too.
    Returns ``(fields_scanned, hits)``.
    """
    n, hits = 0, []
    for section in ("categories", "collections", "products", "variants"):
        for i, rec in enumerate(seed_doc.get(section, [])):
            for k, v in rec.items():
                if not isinstance(v, str) or k.startswith("_"):
                    continue
                n += 1
                classes = ("colour", "phrase", "head", "fine") if k in DISPLAY_KEYS else ("colour", "phrase", "head")
                for h in vocab.scan(v, classes):
                    hits.append({"record": f"{section}[{i}]", "field": k, "value": v[:200],
                                 "class": h.cls, "term": h.term, "match": h.match})
    return n, hits


@dataclass
class AuditReport:
    pages: int = 0
    fields_scanned: int = 0
    unique_fields: int = 0
    fields_by_kind: dict[str, int] = field(default_factory=dict)
    hits: list[dict] = field(default_factory=list)
    hits_by_class: dict[str, int] = field(default_factory=dict)
    broken_links: list[dict] = field(default_factory=list)
    products_reached: int = 0
    products_total: int = 0
    bijection_problems: list[str] = field(default_factory=list)
    catalog_fields: int = 0          # string fields in seed_v2.json (when given)
    catalog_hits: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (not self.hits and not self.broken_links and not self.bijection_problems
                and not self.catalog_hits and self.products_reached == self.products_total)

    def to_dict(self, max_hits: int = 50) -> dict:
        d = {k: getattr(self, k) for k in (
            "pages", "fields_scanned", "unique_fields", "fields_by_kind", "hits_by_class",
            "broken_links", "products_reached", "products_total", "bijection_problems",
            "catalog_fields", "seconds")}
        d["catalog_hits"] = self.catalog_hits[:max_hits]
        d["n_hits"] = len(self.hits)
        d["hits"] = self.hits[:max_hits]
        d["ok"] = self.ok
        return d


def crawl_and_audit(base_url: str, catalog: Catalog, vocab: Vocabulary | None = None,
                    *, client=None, max_pages: int = 5000, seed_doc: dict | None = None) -> AuditReport:
    """Crawl the shop at ``base_url`` (or through an httpx-like ``client``) and audit it.

    ``seed_doc`` (the parsed ``seed_v2.json``) adds a scan of the catalogue records themselves.
    """
    import httpx

    t0 = time.perf_counter()
    vocab = vocab or Vocabulary.from_catalog(catalog)
    styles = {c.style for c in catalog.collections}
    own = client is None
    client = client or httpx.Client(base_url=base_url, timeout=30.0)
    rep = AuditReport(products_total=len(catalog.variants))
    try:
        # Fill the wishlist and cart first so their pages render items (form-only state).
        first = catalog.variants[0].url_hash
        client.post(f"/wishlist/add/{first}")
        client.post(f"/cart/add/{first}")
        seeds = ["/", "/wishlist", "/cart", "/checkout", "/search", "/search?q=chair",
                 f"/search?q={catalog.collections[0].series}", "/no-such-page"]
        expect_404 = {"/no-such-page"}
        queue, seen = deque(seeds), set(seeds)
        unique: set[tuple[str, str]] = set()
        kinds: Counter = Counter()
        cache: dict = {}
        reached: set[str] = set()
        while queue and rep.pages < max_pages:
            path = queue.popleft()
            r = client.get(path)
            if r.status_code >= 400 and path not in expect_404:
                rep.broken_links.append({"url": path, "status": r.status_code})
                continue
            if "text/html" not in r.headers.get("content-type", ""):
                continue
            rep.pages += 1
            if path.startswith("/product/"):
                reached.add(path.rsplit("/", 1)[-1])
            fields, links = extract_fields(r.text, path)
            rep.fields_scanned += len(fields)
            for f in fields:
                kinds[f.kind.split(":")[0]] += 1
                unique.add((f.kind, f.value))
            for f, h in scan_fields(fields, vocab, styles, cache):
                rep.hits.append({"page": f.page, "field": f.kind, "value": f.value[:200],
                                 "class": h.cls, "term": h.term, "match": h.match})
            for href in links:
                u = urlsplit(urljoin(base_url.rstrip("/") + path, href))
                if u.netloc and u.netloc != urlsplit(base_url).netloc:
                    continue
                nxt = u.path + (f"?{u.query}" if u.query else "")
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        rep.unique_fields = len(unique)
        rep.fields_by_kind = dict(kinds)
        rep.hits_by_class = dict(Counter(h["class"] for h in rep.hits))
        rep.products_reached = len(reached & set(catalog.by_hash))
        rep.bijection_problems = check_bijection(catalog)
        if seed_doc is not None:
            rep.catalog_fields, rep.catalog_hits = audit_catalog_records(seed_doc, vocab)
    finally:
        if own:
            client.close()
    rep.seconds = round(time.perf_counter() - t0, 3)
    return rep
