"""Painters for the decor categories: cushion, vase, rug, plant pot, wall art."""

from __future__ import annotations

import math

from vismem.env.storefront.images.paint import Painter
from vismem.env.storefront.images.styles import shade


def cushion(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    shape = rng.choice(("square", "square", "lumbar", "round")) if st.name != "art_deco" else rng.choice(("round", "square"))
    v0 = 0.0 if shape != "lumbar" else 0.3
    if shape == "round":
        p.d.ellipse(p.r(0.04, 0.02, 0.96, 0.98), fill=f, outline=shade(f, 0.7), width=p.lw * 2)
        n = 12
        for k in range(n):  # pleats to the centre button
            a = 2 * math.pi * k / n
            p.d.line(p.pts((0.5, 0.5), (0.5 + 0.44 * math.cos(a), 0.5 + 0.46 * math.sin(a))),
                     fill=st.accent if st.trim else shade(f, 0.8), width=p.lw)
        p.d.ellipse(p.r(0.45, 0.45, 0.55, 0.55), fill=shade(f, 0.6))
        return
    pinch = rng.uniform(0.03, 0.07)
    pts = p.pts((0.02, v0), (0.5, v0 + pinch), (0.98, v0), (0.95, (v0 + 1) / 2), (0.98, 1.0), (0.5, 1 - pinch),
                (0.02, 1.0), (0.05, (v0 + 1) / 2))
    p.d.polygon(pts, fill=f, outline=shade(f, 0.65) if not st.trim else st.accent, width=p.lw * (3 if st.trim else 2))
    p.pattern(0.12, v0 + 0.1, 0.88, 0.9, f, density=1.2)
    p.d.ellipse(p.r(0.12, v0 + 0.08, 0.45, v0 + 0.08 + (1 - v0) * 0.25), fill=shade(f, 1.12))  # soft highlight
    if st.name == "bohemian" or rng.random() < 0.2:  # tassels
        for u, v in ((0.02, v0), (0.98, v0), (0.02, 1.0), (0.98, 1.0)):
            p.d.polygon(p.pts((u, v), (u - 0.04, v + 0.06 if v < 0.5 else v - 0.06),
                              (u + 0.04, v + 0.06 if v < 0.5 else v - 0.06)), fill=st.accent)


_VASE_PROFILES = {  # radius (share of half-width) along the height, top to bottom
    "amphora": (0.45, 0.35, 0.55, 0.95, 1.0, 0.8, 0.5),
    "bottle": (0.22, 0.22, 0.25, 0.7, 1.0, 0.95, 0.8),
    "bulb": (0.35, 0.3, 0.7, 1.0, 0.95, 0.7, 0.45),
    "cylinder": (0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75),
    "gourd": (0.3, 0.55, 0.4, 0.85, 1.0, 0.85, 0.55),
    "flared": (1.0, 0.8, 0.55, 0.45, 0.5, 0.6, 0.7),
}


def vase(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    prof = _VASE_PROFILES[rng.choice(sorted(_VASE_PROFILES))]
    top = rng.uniform(0.0, 0.25)
    width = rng.uniform(0.6, 0.95)
    rows = [(top + (1 - top) * i / (len(prof) - 1), r * width / 2) for i, r in enumerate(prof)]
    left = [(0.5 - r, v) for v, r in rows]
    right = [(0.5 + r, v) for v, r in reversed(rows)]
    p.d.polygon(p.pts(*left, *right), fill=f, outline=shade(f, 0.7), width=p.lw)
    # glaze highlight and rim
    p.d.line(p.pts(*[(0.5 - r * 0.55, v) for v, r in rows[1:-1]]), fill=shade(f, 1.25), width=p.lw * 3)
    p.d.ellipse(p.r(0.5 - rows[0][1], top - 0.015, 0.5 + rows[0][1], top + 0.015), fill=shade(f, 0.55))
    band = rng.randint(2, 4)
    for i in range(rng.randint(1, 2)):  # decorated bands in the style's pattern / trim
        v, r = rows[band - i]
        if st.trim or st.pattern not in ("none", "grain"):
            ink = st.accent if st.trim else shade(f, 0.7 if sum(f) > 300 else 1.5)
            p.d.line(p.pts((0.5 - r, v), (0.5 + r, v)), fill=ink, width=p.lw * 3)
    if st.pattern in ("dots", "floral", "atomic", "kilim"):
        v, r = rows[3]
        p.pattern(0.5 - r * 0.7, v - 0.1, 0.5 + r * 0.7, v + 0.1, f, density=1.5)


def _rug_map(s: float, t: float) -> tuple[float, float]:
    """Flat rug coordinates (s across, t far→near) → box units of a rug lying on the floor."""
    return 0.5 + (s - 0.5) * (0.72 + 0.28 * t), 0.08 + 0.86 * t


def rug(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    q = lambda *st_: p.pts(*[_rug_map(a, b) for a, b in st_])  # noqa: E731
    oval = st.name == "rustic" and rng.random() < 0.5
    if oval:  # braided oval rug
        for i in range(6):
            k = i * 0.06
            col = f if i % 2 == 0 else shade(f, 0.8)
            poly = [_rug_map(0.5 + (0.5 - k) * math.cos(a), 0.5 + (0.5 - k) * math.sin(a))
                    for a in [2 * math.pi * j / 40 for j in range(40)]]
            p.d.polygon(p.pts(*poly), fill=col)
        return
    p.d.polygon(q((0, 0), (1, 0), (1, 1), (0, 1)), fill=f, outline=shade(f, 0.7))
    border = rng.uniform(0.06, 0.12)
    ink = st.accent if st.trim else shade(f, 0.65 if sum(f) > 300 else 1.6)
    p.d.polygon(q((border, border), (1 - border, border), (1 - border, 1 - border), (border, 1 - border)),
                outline=ink, width=p.lw * 3)
    motif = {"modern": "blocks", "minimalist": "line", "mid_century": "circles", "scandinavian": "stripes",
             "industrial": "worn", "vintage": "medallion", "rustic": "stripes", "bohemian": "diamonds",
             "art_deco": "fans", "japandi": "line"}[st.name]
    if motif == "medallion" or motif == "diamonds":
        n = 1 if motif == "medallion" else rng.randint(2, 4)
        for i in range(n):  # inside the border: centres across 0.15..0.85
            c = 0.15 + 0.7 * (i + 0.5) / n
            w = 0.25 if n == 1 else 0.32 / n
            p.d.polygon(q((c - w, 0.5), (c, 0.2), (c + w, 0.5), (c, 0.8)), fill=ink if i % 2 == 0 else st.accent)
            p.d.polygon(q((c - w / 2, 0.5), (c, 0.35), (c + w / 2, 0.5), (c, 0.65)), fill=shade(f, 0.85))
    elif motif == "stripes":
        n = rng.randint(3, 6)
        for i in range(n):
            a = 0.15 + 0.7 * i / n
            p.d.polygon(q((border + 0.03, a), (1 - border - 0.03, a), (1 - border - 0.03, a + 0.06),
                          (border + 0.03, a + 0.06)), fill=ink)
    elif motif == "blocks":
        for _ in range(3):
            a, b = rng.uniform(0.15, 0.6), rng.uniform(0.15, 0.6)
            p.d.polygon(q((a, b), (a + 0.25, b), (a + 0.25, b + 0.25), (a, b + 0.25)), fill=rng.choice(st.fabrics))
    elif motif == "circles":
        for _ in range(4):
            a, b = rng.uniform(0.2, 0.8), rng.uniform(0.25, 0.75)
            poly = [(a + 0.08 * math.cos(t), b + 0.1 * math.sin(t)) for t in [2 * math.pi * j / 16 for j in range(16)]]
            p.d.polygon(q(*poly), fill=rng.choice(st.fabrics))
    elif motif == "fans":
        for i in range(3):
            c = 0.25 + 0.25 * i
            for k in range(5):
                a = math.pi * (k + 0.5) / 5
                p.d.line(q((c, 0.7), (c + 0.1 * math.cos(a), 0.7 - 0.35 * math.sin(a))), fill=st.accent, width=p.lw * 2)
    elif motif == "worn":
        for _ in range(10):
            a, b = rng.random(), rng.random()
            p.d.line(q((a, b), (min(1, a + 0.15), b + 0.01)), fill=shade(f, 1.2), width=p.lw * 2)
    else:  # a single inner line
        p.d.polygon(q((0.2, 0.25), (0.8, 0.25), (0.8, 0.75), (0.2, 0.75)), outline=ink, width=p.lw)
    if st.name in ("bohemian", "vintage", "rustic", "scandinavian") or rng.random() < 0.3:  # fringe
        for i in range(24):
            s = 0.02 + 0.96 * i / 23
            p.d.line(q((s, 1.0), (s, 1.06)), fill=shade(f, 1.3), width=p.lw)


def plant_pot(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    pot_v = rng.uniform(0.5, 0.6)
    shape = {"rustic": "bucket", "industrial": "cylinder", "bohemian": "belly", "art_deco": "footed",
             "mid_century": "footed", "vintage": "urn"}.get(st.name, rng.choice(("cylinder", "taper", "bowl")))
    # the plant first (behind the rim)
    green, dark = (70, 130, 70), (40, 90, 50)
    plant = rng.choice(("monstera", "snake", "bush", "cactus"))
    if plant == "snake":
        for i in range(6):
            u = 0.3 + 0.4 * i / 5
            tip = rng.uniform(0.0, 0.2)
            p.d.polygon(p.pts((u - 0.05, pot_v + 0.02), (u + rng.uniform(-0.08, 0.08), tip), (u + 0.05, pot_v + 0.02)),
                        fill=green if i % 2 else dark)
    elif plant == "monstera":
        for i in range(6):
            a = math.pi * (0.15 + 0.7 * i / 5)
            cu, cv = 0.5 - 0.32 * math.cos(a), pot_v - 0.3 * math.sin(a) - 0.02
            p.d.line(p.pts((0.5, pot_v), (cu, cv)), fill=dark, width=p.lw * 2)
            p.d.ellipse(p.r(cu - 0.14, cv - 0.1, cu + 0.14, cv + 0.1), fill=green if i % 2 else dark)
    elif plant == "bush":
        for _ in range(14):
            cu, cv = rng.uniform(0.2, 0.8), rng.uniform(0.1, pot_v - 0.05)
            p.d.ellipse(p.r(cu - 0.09, cv - 0.07, cu + 0.09, cv + 0.07), fill=rng.choice((green, dark, (96, 150, 80))))
    else:
        p.rect(0.4, 0.1, 0.6, pot_v + 0.02, green, radius=0.5)
        p.rect(0.24, 0.25, 0.36, 0.42, green, radius=0.5)
        p.rect(0.64, 0.18, 0.76, 0.36, green, radius=0.5)
        p.d.rectangle(p.r(0.3, 0.38, 0.42, 0.42), fill=green)
        p.d.rectangle(p.r(0.58, 0.32, 0.7, 0.36), fill=green)
    top, bot = {"cylinder": (0.3, 0.3), "taper": (0.32, 0.22), "bowl": (0.4, 0.2), "bucket": (0.34, 0.26),
                "belly": (0.3, 0.26), "footed": (0.34, 0.18), "urn": (0.3, 0.2)}[shape]
    foot = 0.08 if shape in ("footed", "urn") else 0.0
    if shape in ("belly", "urn", "bowl"):
        pts = [(0.5 - top, pot_v), (0.5 - top - 0.08, (pot_v + 1) / 2), (0.5 - bot, 1 - foot),
               (0.5 + bot, 1 - foot), (0.5 + top + 0.08, (pot_v + 1) / 2), (0.5 + top, pot_v)]
    else:
        pts = [(0.5 - top, pot_v), (0.5 - bot, 1 - foot), (0.5 + bot, 1 - foot), (0.5 + top, pot_v)]
    p.d.polygon(p.pts(*pts), fill=f, outline=shade(f, 0.7), width=p.lw)
    p.pattern(0.5 - bot, pot_v + 0.08, 0.5 + bot, 0.9 - foot, f, density=1.3)
    p.rect(0.5 - top - 0.03, pot_v - 0.02, 0.5 + top + 0.03, pot_v + 0.05,
           st.accent if st.trim else shade(f, 0.88), radius=0.2)
    if foot:
        p.rect(0.5 - bot - 0.04, 1 - foot, 0.5 + bot + 0.04, 1.0, st.accent if st.trim else shade(f, 0.8), radius=0.1)
    if st.name == "industrial":
        for i in range(3):
            vv = pot_v + 0.12 + i * 0.1
            p.d.line(p.pts((0.5 - top + 0.02, vv), (0.5 + top - 0.02, vv)), fill=st.metal, width=p.lw * 2)


def wall_art(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    portrait = rng.random() < 0.5
    u0, u1 = (0.18, 0.82) if portrait else (0.0, 1.0)
    v0, v1 = (0.0, 1.0) if portrait else (0.15, 0.85)
    frame = {"art_deco": st.accent, "vintage": st.metal, "modern": (30, 30, 32), "minimalist": (235, 235, 235),
             "industrial": st.metal, "rustic": st.wood, "bohemian": st.wood}.get(st.name, st.wood)
    fw = 0.05 if st.name not in ("vintage", "art_deco") else 0.08
    p.d.line(p.pts((0.5, v0 - 0.12), (u0 + 0.1, v0)), fill=(90, 90, 90), width=p.lw)  # hanging wire
    p.d.line(p.pts((0.5, v0 - 0.12), (u1 - 0.1, v0)), fill=(90, 90, 90), width=p.lw)
    p.rect(u0, v0, u1, v1, frame, radius=0.0)
    mat = st.name in ("minimalist", "scandinavian", "japandi", "modern")
    iu0, iv0, iu1, iv1 = u0 + fw, v0 + fw, u1 - fw, v1 - fw
    if mat:
        p.d.rectangle(p.r(iu0, iv0, iu1, iv1), fill=(246, 244, 240))
        iu0, iv0, iu1, iv1 = iu0 + 0.06, iv0 + 0.06, iu1 - 0.06, iv1 - 0.06
    canvas = shade(f, 1.55) if sum(f) < 450 else f
    p.d.rectangle(p.r(iu0, iv0, iu1, iv1), fill=canvas)
    cw, ch = iu1 - iu0, iv1 - iv0
    cols = [c for c in st.fabrics if c != canvas] or [st.accent]
    name = st.name
    if name in ("modern", "mid_century"):  # colour blocks / atomic shapes
        for _ in range(rng.randint(3, 5)):
            a, b = iu0 + rng.random() * cw * 0.6, iv0 + rng.random() * ch * 0.6
            c = rng.choice(cols)
            if rng.random() < 0.5 or name == "modern":
                p.d.rectangle(p.r(a, b, a + cw * rng.uniform(0.2, 0.4), b + ch * rng.uniform(0.2, 0.4)), fill=c)
            else:
                p.d.ellipse(p.r(a, b, a + cw * 0.3, b + cw * 0.3 * p.w / p.h), fill=c)
    elif name in ("minimalist", "japandi"):  # a single stroke or ensō
        if rng.random() < 0.5:
            p.d.arc(p.r(iu0 + cw * 0.2, iv0 + ch * 0.2, iu1 - cw * 0.2, iv1 - ch * 0.2), rng.randint(0, 90),
                    rng.randint(290, 350), fill=(40, 40, 40), width=p.lw * 5)
        else:
            p.d.line(p.pts((iu0 + cw * 0.2, iv0 + ch * rng.uniform(0.3, 0.7)), (iu1 - cw * 0.2, iv0 + ch * rng.uniform(0.3, 0.7))),
                     fill=(40, 40, 40), width=p.lw * 3)
    elif name in ("vintage", "rustic"):  # landscape: sky, sun, hills
        p.d.rectangle(p.r(iu0, iv0, iu1, iv0 + ch * 0.55), fill=(196, 212, 222))
        p.d.ellipse(p.r(iu0 + cw * 0.6, iv0 + ch * 0.1, iu0 + cw * 0.78, iv0 + ch * 0.1 + cw * 0.18 * p.w / p.h), fill=(236, 200, 120))
        for i in range(rng.randint(2, 3)):
            hv = iv0 + ch * (0.45 + 0.12 * i)
            p.d.chord(p.r(iu0 - cw * 0.2 + i * 0.1, hv, iu1 + cw * 0.2 - i * 0.05, hv + ch * 0.6), 180, 360,
                      fill=shade((90, 120, 80), 0.8 + 0.15 * i))
        p.d.rectangle(p.r(iu0, iv1 - ch * 0.1, iu1, iv1), fill=(90, 110, 70))
    elif name == "scandinavian":  # botanical line leaf
        cu = iu0 + cw / 2
        p.d.line(p.pts((cu, iv1 - ch * 0.1), (cu, iv0 + ch * 0.1)), fill=(60, 80, 60), width=p.lw * 2)
        for i in range(rng.randint(3, 6)):
            vv = iv0 + ch * (0.2 + 0.12 * i)
            side = 1 if i % 2 else -1
            p.d.ellipse(p.r(min(cu, cu + side * cw * 0.3), vv - 0.04, max(cu, cu + side * cw * 0.3), vv + 0.04), fill=rng.choice(cols))
    elif name == "industrial":  # blueprint grid
        p.d.rectangle(p.r(iu0, iv0, iu1, iv1), fill=(40, 70, 110))
        for i in range(1, 6):
            p.d.line(p.pts((iu0 + cw * i / 6, iv0), (iu0 + cw * i / 6, iv1)), fill=(120, 150, 190), width=p.lw)
            p.d.line(p.pts((iu0, iv0 + ch * i / 6), (iu1, iv0 + ch * i / 6)), fill=(120, 150, 190), width=p.lw)
        p.d.ellipse(p.r(iu0 + cw * 0.3, iv0 + ch * 0.3, iu1 - cw * 0.3, iv1 - ch * 0.3), outline=(230, 235, 240), width=p.lw * 2)
    elif name == "bohemian":  # rainbow arches
        n = rng.randint(3, 5)
        for i in range(n):
            k = i * 0.08
            p.d.chord(p.r(iu0 + cw * (0.1 + k), iv0 + ch * (0.3 + k), iu1 - cw * (0.1 + k), iv1 + ch * (0.5 - k)),
                      180, 360, fill=cols[i % len(cols)])
    else:  # art deco sunburst
        p.d.rectangle(p.r(iu0, iv0, iu1, iv1), fill=f)
        cu, cv = iu0 + cw / 2, iv1
        for k in range(rng.randint(7, 12)):
            a = math.pi * (k + 0.5) / 12
            p.d.line(p.pts((cu, cv), (cu + cw * 0.6 * math.cos(a), cv - ch * 0.9 * math.sin(a))), fill=st.accent, width=p.lw * 2)
