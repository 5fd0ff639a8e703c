"""Drawing helpers shared by the product painters: a box in relative units, legs, patterns."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from PIL import ImageDraw

from vismem.env.storefront.images.styles import RGB, Style, shade


@dataclass
class Painter:
    """Draws one product inside ``box`` (pixels of the supersampled layer) in relative units."""

    d: ImageDraw.ImageDraw
    x0: float
    y0: float
    w: float
    h: float
    style: Style
    rng: random.Random
    fabric: RGB

    def x(self, u: float) -> float:
        return self.x0 + u * self.w

    def y(self, v: float) -> float:
        return self.y0 + v * self.h

    def r(self, u0: float, v0: float, u1: float, v1: float) -> list[float]:
        return [self.x(u0), self.y(v0), self.x(u1), self.y(v1)]

    def pts(self, *uv: tuple[float, float]) -> list[tuple[float, float]]:
        return [(self.x(u), self.y(v)) for u, v in uv]

    @property
    def lw(self) -> int:
        return max(2, int(self.w / 160))

    def rect(self, u0: float, v0: float, u1: float, v1: float, fill: RGB, *, radius: float | None = None,
             outline: RGB | None = None) -> None:
        """A rounded rectangle with the style's rounding (``radius`` overrides, as a share of the short side)."""
        box = self.r(u0, v0, u1, v1)
        rad = self.style.radius if radius is None else radius
        short = min(box[2] - box[0], box[3] - box[1])
        self.d.rounded_rectangle(box, radius=max(0, rad * short), fill=fill,
                                 outline=outline or shade(fill, 0.7), width=self.lw)

    def leg(self, u: float, v0: float, v1: float, *, width: float = 0.035, side: int = 0, color: RGB | None = None) -> None:
        """One leg from ``v0`` down to ``v1`` at ``u``; ``side`` (-1/0/1) splays it outwards."""
        st = self.style
        c = color or (st.metal if st.leg in ("pin", "thin", "frame", "gold") else st.wood)
        kind = st.leg
        if kind in ("pin", "thin"):
            wd = width * (0.5 if kind == "thin" else 0.7)
            self.d.rectangle(self.r(u - wd / 2, v0, u + wd / 2, v1), fill=c)
        elif kind in ("tapered", "splayed", "gold"):
            dx = 0.06 * side if kind == "splayed" else 0.015 * side
            self.d.polygon(self.pts((u - width / 2, v0), (u + width / 2, v0), (u + dx + width / 4, v1),
                                    (u + dx - width / 4, v1)), fill=c)
            if kind == "gold":
                self.d.ellipse(self.r(u + dx - width / 2, v1 - 0.02, u + dx + width / 2, v1), fill=shade(c, 1.3))
        elif kind == "frame":
            self.d.rectangle(self.r(u - width / 3, v0, u + width / 3, v1), fill=c)
            self.d.rectangle(self.r(u - width, v1 - 0.015, u + width, v1), fill=c)
        elif kind == "turned":
            self.d.rectangle(self.r(u - width / 4, v0, u + width / 4, v1), fill=c)
            n = 3
            for i in range(n):
                vv = v0 + (v1 - v0) * (i + 0.6) / (n + 0.3)
                self.d.ellipse(self.r(u - width * 0.55, vv - 0.018, u + width * 0.55, vv + 0.018), fill=shade(c, 0.85))
        elif kind == "block":
            self.d.rectangle(self.r(u - width * 0.9, v0, u + width * 0.9, v1), fill=c, outline=shade(c, 0.75))
        elif kind == "rattan":
            self.d.polygon(self.pts((u - width / 2, v0), (u + width / 2, v0), (u + 0.03 * side + width / 3, v1),
                                    (u + 0.03 * side - width / 3, v1)), fill=c)
            for i in range(4):
                vv = v0 + (v1 - v0) * (i + 0.5) / 4
                self.d.line(self.pts((u - width / 2, vv), (u + width / 2, vv)), fill=shade(c, 0.7), width=self.lw)
        else:
            raise ValueError(f"unknown leg kind {kind!r}")

    def pattern(self, u0: float, v0: float, u1: float, v1: float, base: RGB, *, kind: str | None = None,
                density: float = 1.0) -> None:
        """Fill a region with the style's pattern family (seeded details)."""
        kind = kind or self.style.pattern
        d, rng, st = self.d, self.rng, self.style
        ink = st.accent if st.trim else shade(base, 0.72 if sum(base) > 300 else 1.45)
        bw, bh = u1 - u0, v1 - v0
        if kind == "none":
            return
        if kind == "blocks":
            for _ in range(2):
                a, b = u0 + rng.random() * bw * 0.6, v0 + rng.random() * bh * 0.5
                d.rectangle(self.r(a, b, min(u1, a + bw * 0.35), min(v1, b + bh * 0.4)), fill=shade(base, 0.85))
        elif kind == "lines":
            n = rng.randint(2, 4)
            for i in range(n):
                vv = v0 + bh * (i + 1) / (n + 1)
                d.line(self.pts((u0 + bw * 0.06, vv), (u1 - bw * 0.06, vv)), fill=ink, width=self.lw)
        elif kind in ("dots", "atomic"):
            step = 0.09 / density
            for i, uu in enumerate(_frange(u0 + step / 2, u1, step * self.h / self.w * (bh / bh))):
                for j, vv in enumerate(_frange(v0 + step / 2, v1, step)):
                    if kind == "atomic" and (i + j) % 3:
                        continue
                    rr = 0.012 if kind == "dots" else 0.02
                    d.ellipse(self.r(uu - rr * self.h / self.w, vv - rr, uu + rr * self.h / self.w, vv + rr), fill=ink)
                    if kind == "atomic":
                        for k in range(4):
                            ang = k * math.pi / 4
                            du, dv = 0.035 * math.cos(ang) * self.h / self.w, 0.035 * math.sin(ang)
                            d.line(self.pts((uu - du, vv - dv), (uu + du, vv + dv)), fill=ink, width=self.lw)
        elif kind == "grain":
            for _ in range(int(6 * density)):
                vv = v0 + rng.random() * bh
                d.line(self.pts((u0 + bw * 0.05, vv), (u1 - bw * 0.05, vv + rng.uniform(-0.01, 0.01))),
                       fill=shade(base, 0.8), width=self.lw)
        elif kind == "floral":
            for _ in range(int(5 * density)):
                uu, vv = u0 + bw * (0.15 + 0.7 * rng.random()), v0 + bh * (0.15 + 0.7 * rng.random())
                rr = 0.02
                for k in range(5):
                    ang = k * 2 * math.pi / 5
                    cu, cv = uu + rr * 1.3 * math.cos(ang) * self.h / self.w, vv + rr * 1.3 * math.sin(ang)
                    d.ellipse(self.r(cu - rr * self.h / self.w, cv - rr, cu + rr * self.h / self.w, cv + rr), fill=ink)
                d.ellipse(self.r(uu - 0.008, vv - 0.008, uu + 0.008, vv + 0.008), fill=shade(base, 0.6))
        elif kind == "plaid":
            for i in range(1, 4):
                uu = u0 + bw * i / 4
                d.line(self.pts((uu, v0), (uu, v1)), fill=ink, width=self.lw * 2)
                vv = v0 + bh * i / 4
                d.line(self.pts((u0, vv), (u1, vv)), fill=ink, width=self.lw * 2)
        elif kind == "kilim":
            n = rng.randint(2, 4)
            cu, hh = (u0 + u1) / 2, bh / 2
            for i in range(n):
                uu = u0 + bw * (i + 0.5) / n
                hw = bw / (2 * n) * 0.8
                d.polygon(self.pts((uu, v0 + bh * 0.15), (uu + hw, v0 + hh), (uu, v1 - bh * 0.15), (uu - hw, v0 + hh)),
                          fill=ink if i % 2 == 0 else st.accent)
            del cu
        elif kind == "fan":
            cu, n = (u0 + u1) / 2, 7
            for k in range(n):
                ang = math.pi * (k + 0.5) / n
                d.line(self.pts((cu, v1), (cu + 0.5 * bw * math.cos(ang), v1 - bh * 0.9 * math.sin(ang))),
                       fill=st.accent, width=self.lw)
        else:
            raise ValueError(f"unknown pattern {kind!r}")


def _frange(a: float, b: float, step: float):
    while a < b:
        yield a
        a += step
