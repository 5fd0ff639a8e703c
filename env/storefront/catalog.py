"""The DMV-Bench catalogue as a typed, frozen model, validated at load time.

Loads the official ``seed_v2.json`` (categories, collections, products, 1,000 variants) and
``cue_registry.json`` (one (object, colour) cue per variant) from ``<data_dir>/dmv-bench/`` and
checks what the benchmark's ground truth rests on:

* every ``urlHash == sha1(f"{cat}|{style}|{idx:02d}|v2").hexdigest()[:8]``;
* the registry and the seed agree on every variant's cue;
* the cue map is a bijection: 100 objects x 10 colours = 1,000 distinct cues, one per variant.

Malformed data raises :class:`vismem.core.errors.DataError` naming the file and record.

**Colour order.** In the official data the price-ascending card position of a variant equals
the index of its cue colour in :data:`COLOURS` (card 01 is always red), so a policy that learns
"the first card is red" recalls without looking. By default (``colour_order="seeded"``) we
permute the ten colours within each collection with ``random.Random(f"colours.{seed}.{cat}.{style}")``;
the object stays the collection's, so the bijection still holds. ``colour_order="official"``
reproduces the released assignment exactly.

Each variant records ``image_idx``: the index of the *official* image file that depicts its cue
(the official files are ordered by colour index), so the official image set stays usable under
the seeded permutation: ``image_path`` is ``with_cue/<cat>/<style>/<image_idx:02d>.png``.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from vismem.core.errors import ConfigError, DataError
from vismem.core.unique import UniqueIds, json_loads_unique

#: The ten basic cue colours, in the official index order.
COLOURS: tuple[str, ...] = (
    "red", "blue", "green", "yellow", "white", "black", "brown", "beige", "orange", "purple",
)
#: Category slugs in the official generator's order (the order matters: the chains' category
#: rotation ``sample``s it).
CATEGORIES: tuple[str, ...] = ("chair", "sofa", "lamp", "cushion", "vase",
                               "rug", "table", "bookshelf", "plant_pot", "wall_art")
#: The ten collection styles, as the site's URL slugs.
STYLES: tuple[str, ...] = ("modern", "minimalist", "vintage", "industrial", "scandinavian",
                           "bohemian", "mid_century", "rustic", "japandi", "art_deco")
ColourOrder = Literal["seeded", "official"]
SEED_FILE = "seed_v2.json"
#: Largest catalogue or cue-registry file read (bytes; both are read whole).
MAX_CATALOG_BYTES = 64 << 20
CUE_FILE = "cue_registry.json"
CATALOG_SCHEMA_VERSION = 1
N_CATEGORIES, N_STYLES, N_VARIANTS_PER_COLLECTION = 10, 10, 10


def url_hash(cat: str, style: str, idx: int) -> str:
    """The frozen DMV-Bench v2 product hash (recovered from the released data)."""
    return hashlib.sha1(f"{cat}|{style}|{idx:02d}|v2".encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Category:
    slug: str            # "plant_pot"
    display: str         # "Plant Pots"
    description: str
    sort_order: int


@dataclass(frozen=True)
class Collection:
    slug: str            # "chair-modern" (URL: /collection/<slug>)
    cat: str
    style: str
    name: str            # "Lumen Chairs"
    series: str          # "Lumen"
    product_name: str    # "Lumen Chair"
    description: str     # product baseDesc (L2: class + series)
    long_description: str
    material: str        # "varied"
    display_order: int
    cue_object: str      # the collection's cue object (one per collection)


@dataclass(frozen=True)
class Variant:
    url_hash: str
    cat: str
    style: str
    idx: int             # card position 0..9 (price-ascending), also in the hash
    name: str            # "Lumen Chair 01"
    price: float
    collection: str      # collection display name, "Lumen Chairs"
    collection_slug: str
    cue_object: str
    cue_color: str
    image_idx: int       # index of the official image file depicting this cue

    @property
    def cue(self) -> str:
        """The cue phrase as a probe would state it: "red wool scarf"."""
        return f"{self.cue_color} {self.cue_object}"

    @property
    def image_path(self) -> str:
        """Relative image path in the official layout (``with_cue/<cat>/<style>/NN.png``)."""
        return f"with_cue/{self.cat}/{self.style}/{self.image_idx:02d}.png"

    @property
    def base_image_path(self) -> str:
        """The cue-free image of the same variant (official ``base/`` layout)."""
        return f"base/{self.cat}/{self.style}/{self.image_idx:02d}.png"

    @property
    def url(self) -> str:
        return f"/product/{self.url_hash}"


@dataclass(frozen=True)
class Catalog:
    """The whole storefront catalogue. Tuples are in the official display order."""

    version: str
    registry_version: str
    colour_order: ColourOrder
    seed: int
    categories: tuple[Category, ...]
    collections: tuple[Collection, ...]
    variants: tuple[Variant, ...]

    # -- lookups (built lazily; the dataclass stays frozen and hashable by value) --
    @cached_property
    def by_hash(self) -> dict[str, Variant]:
        return {v.url_hash: v for v in self.variants}

    @cached_property
    def category_by_slug(self) -> dict[str, Category]:
        return {c.slug: c for c in self.categories}

    @cached_property
    def collection_by_slug(self) -> dict[str, Collection]:
        return {c.slug: c for c in self.collections}

    def collections_of(self, cat: str) -> list[Collection]:
        return [c for c in self.collections if c.cat == cat]

    def variants_of(self, collection_slug: str) -> list[Variant]:
        """The ten variants of a collection in card order (idx 0..9, price ascending)."""
        return [v for v in self.variants if v.collection_slug == collection_slug]

    def by_cue(self, obj: str, colour: str) -> Variant:
        """The unique variant carrying the cue (object, colour)."""
        for v in self.variants:
            if v.cue_object == obj and v.cue_color == colour:
                return v
        raise KeyError((obj, colour))

    @property
    def cue_objects(self) -> list[str]:
        return sorted({v.cue_object for v in self.variants})

    def to_polars(self):
        """One row per variant (the ``catalog.parquet`` table)."""
        import polars as pl

        schema = {
            "url_hash": pl.Utf8, "cat": pl.Utf8, "style": pl.Utf8, "idx": pl.Int32,
            "name": pl.Utf8, "price": pl.Float64, "collection": pl.Utf8,
            "collection_slug": pl.Utf8, "cue_object": pl.Utf8, "cue_color": pl.Utf8,
            "image_idx": pl.Int32, "image_path": pl.Utf8,
        }
        cols = {name: [getattr(v, name) for v in self.variants] for name in schema}  # Variant attributes
        return pl.DataFrame(cols, schema=schema)

    def to_arrow(self):
        return self.to_polars().to_arrow()


# --------------------------------------------------------------------------- loading


def dmv_dir(data_dir: str | Path) -> Path:
    """Accept either the shared data dir (containing ``dmv-bench/``) or the folder itself."""
    p = Path(data_dir)
    return p / "dmv-bench" if (p / "dmv-bench" / SEED_FILE).exists() else p


def _read_json(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_CATALOG_BYTES:
            raise DataError(f"{path}: {size:,} bytes, more than the {MAX_CATALOG_BYTES:,} a catalogue file may have "
                            "(seed_v2.json has 0.7 MB)")
        return json_loads_unique(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    except RecursionError:
        raise DataError(f"{path}: not valid JSON (nested too deep to read)") from None


def _get(rec: Any, key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: record is not an object")
    if key not in rec:
        raise DataError(f"{where}: missing field {key!r}")
    val = rec[key]
    if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
        raise DataError(f"{where}: field {key!r} has type {type(val).__name__}")
    return val


def _list(doc: Any, key: str, where: str) -> list:
    return _get(doc, key, list, where)


def load_catalog(
    data_dir: str | Path,
    *,
    seed: int = 0,
    colour_order: ColourOrder = "seeded",
    seed_doc: dict | None = None,
    cue_doc: dict | None = None,
) -> Catalog:
    """Load and validate the catalogue.

    ``seed_doc``/``cue_doc`` override the files' parsed contents (tests inject malformed copies).
    """
    if colour_order not in ("seeded", "official"):
        raise ConfigError(f"colour_order must be 'seeded' or 'official', not {colour_order!r}")
    d = dmv_dir(data_dir)
    seed_path, cue_path = d / SEED_FILE, d / CUE_FILE
    sd = seed_doc if seed_doc is not None else _read_json(seed_path)
    cd = cue_doc if cue_doc is not None else _read_json(cue_path)
    sp, cp = str(seed_path), str(cue_path)

    categories, cat_ids = _categories(sd, sp)
    products = _products(sd, sp, cat_ids)
    raw_variants = _list(sd, "variants", sp)
    reg = _registry_rows(cd, cp)
    coll_recs = _collection_records(sd, sp, cat_ids)
    official = _official_variants(raw_variants, coll_recs, reg, sp, cp)
    _check_bijection(official, sp)
    collections, variants = _collections_and_variants(categories, cat_ids, coll_recs, products, official,
                                                      seed=seed, colour_order=colour_order, sp=sp)
    if {c.slug for c in categories} != {c.cat for c in collections}:
        raise DataError(f"{sp}: categories and collections disagree")
    return Catalog(
        version=str(sd.get("version", "")), registry_version=str(cd.get("version", "")),
        colour_order=colour_order, seed=seed, categories=tuple(categories),
        collections=tuple(collections), variants=tuple(variants))


def _categories(sd: Any, sp: str) -> tuple[list[Category], dict[str, str]]:
    """The categories in sort order, and category id -> slug."""
    categories = []
    cat_ids: dict[str, str] = {}
    ids, slugs = UniqueIds("category id"), UniqueIds("category slug")
    for i, rec in enumerate(_list(sd, "categories", sp)):
        w = f"{sp}: categories[{i}]"
        slug = _get(rec, "slug", str, w)
        ids.add(_get(rec, "id", str, w), f"categories[{i}]", prefix=f"{sp}: ")
        slugs.add(slug, f"categories[{i}]", prefix=f"{sp}: ")
        cat_ids[_get(rec, "id", str, w)] = slug
        categories.append(Category(slug, _get(rec, "display", str, w),
                                   _get(rec, "description", str, w), _get(rec, "sortOrder", int, w)))
    categories.sort(key=lambda c: c.sort_order)
    return categories, cat_ids


def _products(sd: Any, sp: str, cat_ids: dict[str, str]) -> dict[tuple[str, str], dict]:
    """``(category, style) -> {name, desc, long, material}`` of the seed's products."""
    products: dict[tuple[str, str], dict] = {}
    ids = UniqueIds("product id")
    for i, rec in enumerate(_list(sd, "products", sp)):
        w = f"{sp}: products[{i}]"
        pid = _get(rec, "id", str, w)
        ids.add(pid, f"products[{i}]", prefix=f"{sp}: ")
        cat = cat_ids.get(_get(rec, "categoryId", str, w))
        if cat is None or not pid.startswith(f"prod_{cat}_"):
            raise DataError(f"{w} ({pid}): unknown category or malformed id")
        products[(cat, pid[len(f"prod_{cat}_"):])] = {
            "name": _get(rec, "baseName", str, w), "desc": _get(rec, "baseDesc", str, w),
            "long": _get(rec, "longDesc", str, w), "material": _get(rec, "material", str, w),
        }
    return products


def _registry_rows(cd: Any, cp: str) -> dict[str, dict]:
    """The cue registry: url_hash -> {cat, style, prod_idx, cue_object, cue_color} (hashes unique)."""
    reg: dict[str, dict] = {}
    hashes = UniqueIds("url_hash")
    for i, r in enumerate(_list(cd, "rows", cp)):
        w = f"{cp}: rows[{i}]"
        h = _get(r, "url_hash", str, w)
        hashes.add(h, f"rows[{i}]", prefix=f"{cp}: ")
        reg[h] = {k: _get(r, k, t, w) for k, t in
                  (("cat", str), ("style", str), ("prod_idx", int), ("cue_object", str), ("cue_color", str))}
    return reg


def _collection_records(sd: Any, sp: str, cat_ids: dict[str, str]) -> dict[str, dict]:
    """Collection id -> its fields (and ``where``, for messages)."""
    coll_recs: dict[str, dict] = {}
    ids = UniqueIds("collection id")
    for i, rec in enumerate(_list(sd, "collections", sp)):
        w = f"{sp}: collections[{i}]"
        ids.add(_get(rec, "id", str, w), f"collections[{i}]", prefix=f"{sp}: ")
        coll_recs[_get(rec, "id", str, w)] = {
            "slug": _get(rec, "slug", str, w),
            "cat": cat_ids.get(_get(rec, "categoryId", str, w)),
            "style": _get(rec, "styleSlug", str, w),
            "name": _get(rec, "displayName", str, w),
            "order": _get(rec, "displayOrder", int, w),
            "where": w,
        }
    return coll_recs


def _official_variants(raw_variants: list, coll_recs: dict[str, dict], reg: dict[str, dict],
                       sp: str, cp: str) -> list[dict]:
    """The seed's variants, each checked against the hash formula and the cue registry."""
    official: list[dict] = []
    seen_hashes, seen_ids = UniqueIds("urlHash"), UniqueIds("variant id")
    for i, rec in enumerate(raw_variants):
        w = f"{sp}: variants[{i}]"
        vid = _get(rec, "id", str, w)
        seen_ids.add(vid, f"variants[{i}]", prefix=f"{sp}: ")
        w = f"{w} ({vid})"
        col = coll_recs.get(_get(rec, "collectionId", str, w))
        if col is None or col["cat"] is None:
            raise DataError(f"{w}: unknown collection {rec.get('collectionId')!r}")
        cat, style = col["cat"], col["style"]
        if _get(rec, "styleSlug", str, w) != style:
            raise DataError(f"{w}: styleSlug differs from its collection's ({style})")
        prefix = f"var_{cat}_{style}_"
        if not vid.startswith(prefix) or not vid[len(prefix):].isdigit():
            raise DataError(f"{w}: id does not follow var_<cat>_<style>_<NN>")
        idx = int(vid[len(prefix):])
        h = _get(rec, "urlHash", str, w)
        if h != url_hash(cat, style, idx):
            raise DataError(f"{w}: urlHash {h} != sha1('{cat}|{style}|{idx:02d}|v2')[:8] = "
                            f"{url_hash(cat, style, idx)}")
        seen_hashes.add(h, f"variants[{i}] ({vid})", prefix=f"{sp}: ")
        price = _get(rec, "price", (int, float), w)
        obj, colour = _get(rec, "_cue_object", str, w), _get(rec, "_cue_color", str, w)
        r = reg.get(h)
        if r is None:
            raise DataError(f"{cp}: no row for url_hash {h} (variant {vid} in {sp})")
        if (r["cat"], r["style"], r["prod_idx"], r["cue_object"], r["cue_color"]) != (cat, style, idx, obj, colour):
            raise DataError(f"{cp}: row for url_hash {h} disagrees with {sp} variant {vid} "
                            f"({r['cue_object']}/{r['cue_color']} vs {obj}/{colour})")
        if colour not in COLOURS:
            raise DataError(f"{w}: cue colour {colour!r} is not one of the ten basic colours")
        official.append({"hash": h, "cat": cat, "style": style, "idx": idx,
                         "name": _get(rec, "displayName", str, w), "price": float(price),
                         "col": col, "obj": obj, "colour": colour, "where": w})
    if len(reg) != len(official):
        extra = sorted(h for h in reg if h not in seen_hashes)[:3]
        raise DataError(f"{cp}: {len(reg)} rows but {len(official)} variants in {sp} (e.g. extra {extra})")
    return official


def _check_bijection(official: list[dict], sp: str) -> None:
    """One object per collection, each colour once per collection: every cue names one variant."""
    cues = {(v["obj"], v["colour"]) for v in official}
    objects = {v["obj"] for v in official}
    if len(cues) != len(official):
        raise DataError(f"{sp}: cue map is not injective ({len(official) - len(cues)} repeated cues)")
    if len(cues) != len(objects) * len(COLOURS):
        raise DataError(f"{sp}: {len(objects)} objects x {len(COLOURS)} colours != {len(cues)} cues")


def _collections_and_variants(categories: list[Category], cat_ids: dict[str, str], coll_recs: dict[str, dict],
                              products: dict[tuple[str, str], dict], official: list[dict], *, seed: int,
                              colour_order: ColourOrder, sp: str) -> tuple[list[Collection], list[Variant]]:
    """The collections in category then display order, and their variants with their cue colours
    (the official assignment, or permuted per collection by ``seed``)."""
    by_coll: dict[str, list[dict]] = {}
    for v in official:
        by_coll.setdefault(v["col"]["slug"], []).append(v)
    collections: list[Collection] = []
    variants: list[Variant] = []
    for cid, col in sorted(coll_recs.items(), key=lambda kv: (
            [c.slug for c in categories].index(kv[1]["cat"]) if kv[1]["cat"] in cat_ids.values() else 99,
            kv[1]["order"])):
        members = sorted(by_coll.get(col["slug"], []), key=lambda v: v["idx"])
        if [v["idx"] for v in members] != list(range(N_VARIANTS_PER_COLLECTION)):
            raise DataError(f"{col['where']} ({cid}): expected variants 00..09, got {[v['idx'] for v in members]}")
        objs = {v["obj"] for v in members}
        if len(objs) != 1:
            raise DataError(f"{col['where']} ({cid}): collection has {len(objs)} cue objects, expected 1")
        prod = products.get((col["cat"], col["style"]))
        if prod is None:
            raise DataError(f"{sp}: no product prod_{col['cat']}_{col['style']} for collection {cid}")
        official_colours = [v["colour"] for v in members]
        if colour_order == "official":
            colours = official_colours
        else:
            colours = sorted(official_colours, key=COLOURS.index)
            random.Random(f"colours.{seed}.{col['cat']}.{col['style']}").shuffle(colours)
        # The official image files are ordered by colour index within a collection.
        image_of = {v["colour"]: v["idx"] for v in members}
        obj = members[0]["obj"]
        pname = prod["name"]
        series = pname.rsplit(" ", 1)[0] if " " in pname else pname
        collections.append(Collection(
            slug=col["slug"], cat=col["cat"], style=col["style"], name=col["name"], series=series,
            product_name=pname, description=prod["desc"], long_description=prod["long"],
            material=prod["material"], display_order=col["order"], cue_object=obj))
        for v, colour in zip(members, colours):
            variants.append(Variant(
                url_hash=v["hash"], cat=v["cat"], style=v["style"], idx=v["idx"], name=v["name"],
                price=v["price"], collection=col["name"], collection_slug=col["slug"],
                cue_object=obj, cue_color=colour, image_idx=image_of[colour]))
    return collections, variants
