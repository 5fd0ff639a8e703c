"""Painters for the furniture categories: chair, sofa, side table, bookshelf, lamp.

Every painter draws inside its Painter box only (relative units 0..1, floor at v=1); the style
decides shape language (legs, rounding, pattern, trim), the variant's rng decides details.
"""

from __future__ import annotations

import math

from vismem.env.storefront.images.paint import Painter
from vismem.env.storefront.images.styles import shade


def chair(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    seat_v = rng.uniform(0.52, 0.6) if st.low == 1 else 0.62
    back_top = rng.uniform(0.0, 0.14)
    arms = rng.random() < 0.4
    inset = rng.uniform(0.1, 0.18)
    # back legs (behind, darker), then back, seat, front legs
    for u, s in ((0.24, -1), (0.76, 1)):
        p.leg(u, seat_v, 0.93, side=s, color=shade(st.wood if st.leg not in ("pin", "thin", "frame", "gold") else st.metal, 0.75))
    bu0, bu1 = inset + 0.05, 1 - inset - 0.05
    if st.name in ("scandinavian", "rustic", "japandi"):  # spindle / slat backs
        p.rect(bu0, back_top, bu1, back_top + 0.09, st.wood, radius=0.3)
        n = rng.randint(3, 6)
        for i in range(n):
            uu = bu0 + 0.04 + (bu1 - bu0 - 0.08) * i / (n - 1)
            p.d.rectangle(p.r(uu - 0.012, back_top + 0.09, uu + 0.012, seat_v), fill=st.wood)
        p.d.rectangle(p.r(bu0, back_top, bu0 + 0.035, seat_v), fill=shade(st.wood, 0.9))
        p.d.rectangle(p.r(bu1 - 0.035, back_top, bu1, seat_v), fill=shade(st.wood, 0.9))
    elif st.name == "art_deco":  # fan back with gilded ribs
        p.d.chord(p.r(bu0 - 0.05, back_top, bu1 + 0.05, seat_v * 2 - back_top), 180, 360, fill=f, outline=st.accent, width=p.lw * 2)
        p.pattern(bu0, back_top + 0.04, bu1, seat_v - 0.02, f, kind="fan")
    elif st.name == "vintage":  # medallion back in a carved frame
        p.d.ellipse(p.r(bu0, back_top, bu1, seat_v + 0.04), fill=st.wood)
        p.d.ellipse(p.r(bu0 + 0.05, back_top + 0.04, bu1 - 0.05, seat_v - 0.01), fill=f)
        p.pattern(bu0 + 0.1, back_top + 0.08, bu1 - 0.1, seat_v - 0.06, f)
    elif st.name == "bohemian":  # rattan peacock back
        p.d.ellipse(p.r(0.02, back_top - 0.02, 0.98, seat_v + 0.1), fill=st.wood, outline=shade(st.wood, 0.7), width=p.lw)
        for i in range(1, 9):
            ang = math.pi * i / 9
            p.d.line(p.pts((0.5, seat_v + 0.05), (0.5 - 0.46 * math.cos(ang), seat_v + 0.05 - 0.55 * math.sin(ang))),
                     fill=shade(st.wood, 0.75), width=p.lw)
    elif st.name == "industrial":  # metal frame with horizontal planks
        p.d.rectangle(p.r(bu0, back_top, bu0 + 0.03, seat_v), fill=st.metal)
        p.d.rectangle(p.r(bu1 - 0.03, back_top, bu1, seat_v), fill=st.metal)
        for i in range(rng.randint(2, 3)):
            vv = back_top + 0.04 + i * 0.12
            p.rect(bu0, vv, bu1, vv + 0.08, st.wood, radius=0.05)
            p.pattern(bu0, vv, bu1, vv + 0.08, st.wood, kind="grain", density=0.4)
    else:  # upholstered shell back (modern, minimalist, mid-century)
        p.rect(bu0, back_top, bu1, seat_v + 0.02, f)
        p.pattern(bu0 + 0.04, back_top + 0.04, bu1 - 0.04, seat_v - 0.04, f)
    # seat with a darker front face
    p.rect(0.12, seat_v - 0.02, 0.88, seat_v + 0.06, f, radius=st.radius / 2)
    p.d.rectangle(p.r(0.13, seat_v + 0.045, 0.87, seat_v + 0.07), fill=shade(f, 0.75))
    if st.trim:
        p.d.line(p.pts((0.12, seat_v + 0.07), (0.88, seat_v + 0.07)), fill=st.accent, width=p.lw * 2)
    if arms:
        for u0 in (0.06, 0.86):
            p.rect(u0, seat_v - 0.16, u0 + 0.08, seat_v - 0.11, st.wood if st.leg != "frame" else st.metal, radius=0.4)
            p.d.rectangle(p.r(u0 + 0.03, seat_v - 0.12, u0 + 0.05, seat_v), fill=st.wood if st.leg != "frame" else st.metal)
    for u, s in ((0.16, -1), (0.84, 1)):
        p.leg(u, seat_v + 0.06, 1.0, side=s)


def sofa(p: Painter) -> None:
    st, rng, f = p.style, p.rng, p.fabric
    n = rng.choice((2, 3, 3))
    arm_w = rng.uniform(0.08, 0.12)
    back_top = rng.uniform(0.05, 0.2)
    seat_v, base_v = 0.55, 0.82
    p.rect(arm_w * 0.6, back_top, 1 - arm_w * 0.6, seat_v + 0.05, shade(f, 0.88))  # back
    for i in range(n):  # back cushions
        u0 = arm_w + (1 - 2 * arm_w) * i / n
        p.rect(u0 + 0.008, back_top + 0.05, u0 + (1 - 2 * arm_w) / n - 0.008, seat_v, f)
        p.pattern(u0 + 0.03, back_top + 0.1, u0 + (1 - 2 * arm_w) / n - 0.03, seat_v - 0.05, f, density=0.8)
    p.rect(arm_w, seat_v - 0.04, 1 - arm_w, base_v, shade(f, 0.92), radius=st.radius / 3)  # seat cushions
    for i in range(1, n):
        uu = arm_w + (1 - 2 * arm_w) * i / n
        p.d.line(p.pts((uu, seat_v - 0.03), (uu, base_v - 0.01)), fill=shade(f, 0.7), width=p.lw)
    for u0 in (0.0, 1 - arm_w):  # arms
        top = seat_v - rng.uniform(0.08, 0.14) if st.name != "art_deco" else seat_v - 0.2
        p.rect(u0, top, u0 + arm_w, base_v, shade(f, 0.82), radius=min(0.5, st.radius + 0.15))
    if st.trim:
        p.d.line(p.pts((0.0, base_v), (1.0, base_v)), fill=st.accent, width=p.lw * 3)
    if st.name == "bohemian":  # fringe along the base
        for i in range(40):
            uu = 0.03 + 0.94 * i / 39
            p.d.line(p.pts((uu, base_v), (uu, base_v + 0.05)), fill=st.accent, width=p.lw)
    if st.name == "industrial":  # rivets / tufting
        for i in range(8):
            p.d.ellipse(p.r(0.12 + i * 0.11, back_top + 0.1, 0.13 + i * 0.11, back_top + 0.12), fill=shade(f, 0.6))
    legs = (0.06, 0.35, 0.65, 0.94) if n == 3 and rng.random() < 0.5 else (0.06, 0.94)
    for u in legs:
        p.leg(u, base_v, 1.0, side=-1 if u < 0.5 else 1, width=0.03)


def table(p: Painter) -> None:
    st, rng = p.style, p.rng
    top = p.fabric if st.name in ("modern", "art_deco", "minimalist") else st.wood
    round_top = rng.random() < 0.5
    top_v = rng.uniform(0.05, 0.2) + (1 - st.low) * 0.3
    thick = 0.05 if st.leg != "block" else 0.08
    shelf = rng.random() < 0.5
    drawer = not round_top and rng.random() < 0.5
    if round_top and st.name in ("modern", "art_deco", "minimalist"):  # pedestal
        p.d.rectangle(p.r(0.45, top_v, 0.55, 0.96), fill=st.metal)
        p.d.ellipse(p.r(0.25, 0.93, 0.75, 1.0), fill=st.metal)
    else:
        for u, s in ((0.14, -1), (0.86, 1), (0.3, -1), (0.7, 1)):
            p.leg(u, top_v + thick, 1.0, side=s, width=0.05)
    if shelf:
        p.rect(0.12, 0.7, 0.88, 0.74, shade(top, 0.9), radius=0.1)
    if drawer:
        p.rect(0.12, top_v + thick, 0.88, top_v + thick + 0.16, shade(top, 0.92), radius=0.05)
        p.d.ellipse(p.r(0.47, top_v + thick + 0.06, 0.53, top_v + thick + 0.1), fill=st.accent if st.trim else st.metal)
    if round_top:
        p.d.ellipse(p.r(0.02, top_v - 0.05, 0.98, top_v + thick + 0.03), fill=shade(top, 0.8))
        p.d.ellipse(p.r(0.02, top_v - 0.07, 0.98, top_v + thick), fill=top)
    else:
        p.rect(0.0, top_v, 1.0, top_v + thick, top, radius=0.2)
    if st.pattern == "grain" or st.name == "rustic":
        p.pattern(0.05, top_v + 0.005, 0.95, top_v + thick - 0.005, top, kind="grain", density=0.3)
    if st.trim:
        p.d.line(p.pts((0.02, top_v + thick), (0.98, top_v + thick)), fill=st.accent, width=p.lw * 2)


def bookshelf(p: Painter) -> None:
    st, rng = p.style, p.rng
    frame = st.metal if st.leg in ("frame",) else (p.fabric if st.name in ("modern", "minimalist") else st.wood)
    n = rng.randint(3, 5)
    side = 0.05 if st.leg != "thin" else 0.03
    top = 0.0 if st.low == 1 else 0.25
    ladder = st.name == "scandinavian"
    if ladder:  # leaning ladder shelf
        p.d.polygon(p.pts((0.2, top), (0.25, top), (0.1, 1.0), (0.05, 1.0)), fill=frame)
        p.d.polygon(p.pts((0.75, top), (0.8, top), (0.95, 1.0), (0.9, 1.0)), fill=frame)
    else:
        p.rect(0.0, top, 1.0, 0.97, shade(frame, 0.75), radius=0.02)  # back panel
        p.d.rectangle(p.r(0.0, top, side, 0.97), fill=frame)
        p.d.rectangle(p.r(1 - side, top, 1.0, 0.97), fill=frame)
        if st.name == "art_deco":
            p.d.chord(p.r(0.0, top - 0.1, 1.0, top + 0.1), 180, 360, fill=frame, outline=st.accent, width=p.lw * 2)
    for i in range(n + 1):
        vv = top + (0.95 - top) * i / n
        inset = 0.0 if not ladder else 0.15 * (1 - (vv - top) / (1 - top)) * 0.6
        p.d.rectangle(p.r(inset + (0.1 if ladder else 0.0), vv, 1 - inset - (0.1 if ladder else 0.0), vv + 0.025),
                      fill=st.wood if st.leg == "frame" else frame)
        if st.trim:
            p.d.line(p.pts((0.0, vv + 0.025), (1.0, vv + 0.025)), fill=st.accent, width=p.lw)
        if i == n:
            break
        nxt = top + (0.95 - top) * (i + 1) / n
        uu, end = 0.08 + inset + (0.06 if ladder else 0.0), 0.92 - inset - (0.06 if ladder else 0.0)
        while uu < end - 0.04:  # books of varied heights; sometimes a gap or an ornament
            if rng.random() < 0.12:
                uu += 0.08
                continue
            bw = rng.uniform(0.03, 0.06)
            bh = (nxt - vv - 0.03) * rng.uniform(0.55, 0.92)
            col = shade(rng.choice(st.fabrics), rng.uniform(0.7, 1.15))
            p.d.rectangle(p.r(uu, nxt - bh, min(end, uu + bw), nxt), fill=col, outline=shade(col, 0.7))
            uu += bw + 0.005
    if st.leg in ("splayed", "tapered", "gold", "turned") and not ladder:
        for u, s in ((0.08, -1), (0.92, 1)):
            p.leg(u, 0.97, 1.0, side=s, width=0.04)


def lamp(p: Painter) -> None:
    st, rng = p.style, p.rng
    shade_c = p.fabric
    floor_lamp = rng.random() < 0.5
    sh_v0 = 0.0 if floor_lamp else 0.35
    sh_h = rng.uniform(0.18, 0.26)
    sh_w = rng.uniform(0.55, 0.85)
    u0, u1 = 0.5 - sh_w / 2, 0.5 + sh_w / 2
    stem_c = st.metal if st.leg in ("pin", "thin", "frame", "gold", "splayed") else st.wood
    # stem / base
    if st.name == "mid_century" or (floor_lamp and st.leg == "splayed"):  # tripod
        for du in (-0.22, 0.0, 0.22):
            p.d.line(p.pts((0.5, sh_v0 + sh_h), (0.5 + du, 1.0)), fill=st.wood, width=p.lw * 3)
    else:
        p.d.rectangle(p.r(0.485, sh_v0 + sh_h, 0.515, 0.96), fill=stem_c)
        if not floor_lamp:  # table lamps get a body
            body = rng.choice(("urn", "column", "sphere"))
            if body == "sphere":
                p.d.ellipse(p.r(0.28, 0.62, 0.72, 0.98), fill=p.style.fabrics[-1], outline=shade(p.style.fabrics[-1], 0.7))
            elif body == "urn":
                p.d.polygon(p.pts((0.4, 0.6), (0.6, 0.6), (0.7, 0.8), (0.6, 0.98), (0.4, 0.98), (0.3, 0.8)), fill=stem_c)
            else:
                p.rect(0.4, 0.6, 0.6, 0.98, stem_c, radius=0.2)
        p.d.ellipse(p.r(0.3, 0.96, 0.7, 1.0), fill=shade(stem_c, 0.8))
    # glow under the shade
    p.d.ellipse(p.r(u0 + 0.05, sh_v0 + sh_h - 0.03, u1 - 0.05, sh_v0 + sh_h + 0.05), fill=(255, 240, 200))
    kind = {"modern": "dome", "minimalist": "drum", "mid_century": "cone", "scandinavian": "bell",
            "industrial": "cage", "vintage": "empire", "rustic": "empire", "bohemian": "rattan",
            "art_deco": "tiered", "japandi": "lantern"}[st.name]
    top_v, bot_v = sh_v0, sh_v0 + sh_h
    if kind == "dome":
        p.d.chord(p.r(u0, top_v, u1, bot_v + sh_h), 180, 360, fill=shade_c, outline=shade(shade_c, 0.7), width=p.lw)
    elif kind == "drum":
        p.rect(u0 + 0.05, top_v, u1 - 0.05, bot_v, shade_c, radius=0.02)
    elif kind in ("cone", "bell", "empire", "rattan"):
        narrow = {"cone": 0.3, "bell": 0.2, "empire": 0.25, "rattan": 0.12}[kind]
        pts = p.pts((u0 + sh_w * narrow, top_v), (u1 - sh_w * narrow, top_v), (u1, bot_v), (u0, bot_v))
        p.d.polygon(pts, fill=shade_c, outline=shade(shade_c, 0.7))
        if kind in ("empire", "rattan"):  # pleats / weave
            for i in range(1, 9):
                a = u0 + sh_w * narrow + (sh_w * (1 - 2 * narrow)) * i / 9
                b = u0 + sh_w * i / 9
                p.d.line(p.pts((a, top_v), (b, bot_v)), fill=shade(shade_c, 0.8), width=p.lw)
        if st.trim:
            p.d.line(p.pts((u0, bot_v), (u1, bot_v)), fill=st.accent, width=p.lw * 2)
    elif kind == "cage":
        p.d.ellipse(p.r(0.42, bot_v - 0.1, 0.58, bot_v + 0.04), fill=(255, 226, 150))  # bulb
        p.d.polygon(p.pts((0.4, top_v), (0.6, top_v), (u1, bot_v), (u0, bot_v)), outline=st.metal, width=p.lw * 2)
        for i in range(1, 5):
            p.d.line(p.pts((0.4 + 0.2 * i / 5, top_v), (u0 + sh_w * i / 5, bot_v)), fill=st.metal, width=p.lw)
    elif kind == "tiered":
        for i in range(3):
            w = sh_w * (0.6 + 0.2 * i)
            p.rect(0.5 - w / 2, top_v + i * sh_h / 3, 0.5 + w / 2, top_v + (i + 1) * sh_h / 3, shade_c, radius=0.1)
            p.d.line(p.pts((0.5 - w / 2, top_v + (i + 1) * sh_h / 3), (0.5 + w / 2, top_v + (i + 1) * sh_h / 3)),
                     fill=st.accent, width=p.lw * 2)
    elif kind == "lantern":
        p.d.ellipse(p.r(u0, top_v - 0.02, u1, bot_v + 0.04), fill=shade(shade_c, 1.2), outline=shade(shade_c, 0.75))
        for i in range(1, 5):
            vv = top_v + (bot_v - top_v + 0.06) * i / 5 - 0.02
            half = sh_w / 2 * math.sqrt(max(0.0, 1 - ((vv - (top_v + bot_v) / 2) / ((bot_v - top_v) / 2 + 0.03)) ** 2))
            p.d.line(p.pts((0.5 - half, vv), (0.5 + half, vv)), fill=shade(shade_c, 0.75), width=p.lw)
