"""Training scenes for the pocket image–text encoder, disjoint from the catalogue by construction.

Each sample is a pure function of ``(seed, index)``: a studio scene built from the catalogue's own
procedural art (product painters, style palettes, cue glyphs and their recolouring) but with this
module's own salt and random layouts — random product, backdrop, fabric, lighting, and one
pictograph at a random place and scale, drawn from a vocabulary wider than the 100 cue objects in
a palette wider than the 10 cue colours. The catalogue renderer (``scene.ProceduralRenderer``) is
never called, so no sample can be a catalogue image; tests check that pixel-wise as well.

Captions name what the pixels show: the colour and the *depicted* object (the glyph actually
drawn, ``glyphs.depicted_object``), in the phrasings a probe or memory uses, sometimes with the
probe's ``CURRENT: <url>`` tail; hard negatives name the same object in another colour and the
same colour on another object.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from vismem.env.storefront.images.colors import CUE_COLORS, CUE_RAMPS, ramp_lut_from
from vismem.env.storefront.images.glyphs import base_glyph, depicted_object, emoji_canvas, fit, glyph_table, recolor_lut, tight
from vismem.env.storefront.images.paint import Painter
from vismem.env.storefront.images.scene import FLOOR, HORIZON, PAINTERS, SIZES
from vismem.env.storefront.images.styles import STYLES

SALT = "pocket-train-1"  # never the catalogue's renderer salt ("v1")

#: Colours beyond the ten cue colours: (shadow, base, highlight) ramps like ``CUE_RAMPS``.
EXTRA_RAMPS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "pink": ((150, 40, 90), (240, 110, 170), (255, 190, 220)),
    "grey": ((70, 70, 72), (128, 128, 130), (190, 190, 192)),
    "teal": ((0, 70, 70), (0, 128, 128), (100, 200, 195)),
    "lime": ((90, 130, 0), (170, 220, 30), (220, 250, 140)),
    "magenta": ((110, 0, 90), (210, 20, 170), (250, 130, 230)),
    "navy": ((5, 10, 50), (20, 35, 110), (90, 110, 180)),
    "olive": ((60, 62, 10), (120, 120, 30), (180, 180, 100)),
    "maroon": ((60, 5, 15), (120, 20, 40), (180, 90, 100)),
    "sky blue": ((60, 120, 170), (120, 190, 235), (200, 235, 255)),
}
RAMPS = {**CUE_RAMPS, **EXTRA_RAMPS}
PALETTE: tuple[str, ...] = CUE_COLORS + tuple(EXTRA_RAMPS)

#: Objects beyond the cue vocabulary: name → Noto Color Emoji codepoint (none is a cue glyph).
EXTRA_OBJECTS: dict[str, str] = {
    "apple": "1F34E", "banana": "1F34C", "grapes": "1F347", "lemon": "1F34B", "pear": "1F350",
    "cherries": "1F352", "strawberry": "1F353", "carrot": "1F955", "pineapple": "1F34D", "umbrella": "2602",
    "guitar": "1F3B8", "trumpet": "1F3BA", "violin": "1F3BB", "drum": "1F941", "bell": "1F514",
    "light bulb": "1F4A1", "flashlight": "1F526", "hammer": "1F528", "wrench": "1F527", "scissors": "2702",
    "padlock": "1F512", "magnet": "1F9F2", "basketball": "1F3C0", "american football": "1F3C8",
    "trophy": "1F3C6", "medal": "1F3C5", "crown": "1F451", "high-heeled shoe": "1F460", "handbag": "1F45C",
    "backpack": "1F392", "top hat": "1F3A9", "lipstick": "1F484", "balloon": "1F388", "teapot": "1FAD6",
    "baby bottle": "1F37C", "birthday cake": "1F382", "doughnut": "1F369", "cookie": "1F36A",
    "lollipop": "1F36D", "ice cream": "1F366", "pizza slice": "1F355", "bicycle": "1F6B2", "toy car": "1F697",
    "rocket": "1F680", "airplane": "2708", "anchor": "2693", "fish": "1F41F", "turtle": "1F422",
    "rabbit": "1F407", "elephant": "1F418", "duck": "1F986", "octopus": "1F419", "crab": "1F980",
    "maple leaf": "1F341", "four-leaf clover": "1F340", "sunflower": "1F33B",
    "heart": "2764", "crescent moon": "1F319", "cloud": "2601", "lightning bolt": "26A1", "snowflake": "2744",
    "musical note": "1F3B5", "puzzle piece": "1F9E9", "die": "1F3B2", "joystick": "1F579", "battery": "1F50B",
    "telephone": "260E", "microphone": "1F3A4", "television": "1F4FA", "floppy disk": "1F4BE",
    "bucket": "1FAA3", "broom": "1F9F9", "basket": "1F9FA", "soap bar": "1F9FC", "toothbrush": "1FAA5",
    "shopping cart": "1F6D2", "watermelon": "1F349", "avocado": "1F951", "chili pepper": "1F336",
    "pumpkin": "1F383", "boot": "1F462", "dress": "1F457", "lantern": "1F3EE", "magnifying glass": "1F50D",
    "compass": "1F9ED", "penguin": "1F427", "owl": "1F989", "dolphin": "1F42C", "paintbrush": "1F58C",
    "crayon": "1F58D", "ringed planet": "1FA90", "traffic cone": "1F6A7", "axe": "1FA93",
    "screwdriver": "1FA9B", "ladder": "1FA9C", "coin": "1FA99", "boomerang": "1FA83", "yo-yo": "1FA80",
    "nesting dolls": "1FA86", "thread spool": "1F9F5", "yarn ball": "1F9F6", "safety pin": "1F9F7",
    "test tube": "1F9EA", "saxophone": "1F3B7", "banjo": "1FA95", "accordion": "1FA97", "shield": "1F6E1",
    "skateboard": "1F6F9", "roller skate": "1F6FC", "fishing pole": "1F3A3", "boxing glove": "1F94A",
    "badminton racket": "1F3F8", "volleyball": "1F3D0", "rugby ball": "1F3C9",
}

#: The cue glyphs by the name of what they depict (what a probe names), then the extras.
CUE_OBJECTS: tuple[str, ...] = tuple(depicted_object(o) for o in glyph_table())
VOCAB: tuple[str, ...] = CUE_OBJECTS + tuple(EXTRA_OBJECTS)
_CUE_BY_DEPICTED = {depicted_object(o): o for o in glyph_table()}

CATEGORY_WORDS = {"plant_pot": "plant pot", "wall_art": "wall art"}
TEMPLATES = (
    "product with {c} {o}", "product with {c} {o}", "a {c} {o}", "the product with the {c} {o}",
    "{c} {o}", "take me back to the product with the {c} {o}", "a photo with a {c} {o} in it",
    "the item shown next to a {c} {o}",
)
PLAIN_TEMPLATES = ("a {cat}", "a {style} {cat}", "product photo of a {cat}", "{style} {cat}")
CUE_FREE_SHARE = 0.06  # samples without any pictograph (captions name the product only)
CUE_VOCAB_SHARE = 0.7  # share of samples whose object is one of the 100 cue glyphs
CUE_PALETTE_SHARE = 0.75  # share of samples in one of the 10 cue colours


@dataclass(frozen=True)
class TrainSample:
    """One training scene: the image, its captions and labels (indices into VOCAB / PALETTE)."""

    image: Image.Image  # RGB, ``size``×``size``
    caption: str  # the positive caption
    negatives: tuple[str, ...]  # hard negatives: same object other colour, same colour other object
    obj: int  # index into VOCAB, -1 when cue-free
    colour: int  # index into PALETTE, -1 when cue-free
    category: str
    style: str
    cue_bbox: tuple[int, int, int, int] | None


def sample_rng(seed: int, index: int, salt: str = SALT) -> random.Random:
    """The rng of sample ``index`` under ``seed``: a pure function of both (and the salt)."""
    h = hashlib.sha256(f"{salt}|{seed}|{index}".encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def ramp_lut_of(colour: str) -> np.ndarray:
    """256×3 uint8 LUT along ``colour``'s three-stop ramp (``colors.ramp_lut_from``)."""
    return ramp_lut_from(RAMPS[colour])


def recolour(glyph: Image.Image, colour: str) -> Image.Image:
    """``glyphs.recolor`` for any palette colour: luminance → the colour's ramp by rank."""
    return recolor_lut(glyph, ramp_lut_of(colour))


@lru_cache(maxsize=None)
def vocab_glyph(name: str) -> Image.Image:
    """The uncoloured glyph (RGBA, tight bbox) of a vocabulary object; cached for the process."""
    if name in _CUE_BY_DEPICTED:
        return base_glyph(_CUE_BY_DEPICTED[name])
    return tight(emoji_canvas(EXTRA_OBJECTS[name]), repr(name))


def sprite(name: str, colour: str, box: int) -> Image.Image:
    """The recoloured glyph fitted into ``box``×``box`` (aspect kept), as the catalogue fits cues."""
    return recolour(fit(vocab_glyph(name), box), colour)


def _jitter(c: tuple[int, int, int], rng: random.Random, amount: int) -> tuple[int, int, int]:
    return tuple(max(0, min(255, v + rng.randint(-amount, amount))) for v in c)  # type: ignore[return-value]


def _backdrop(wall, floor, size: int, horizon: float) -> Image.Image:
    """A studio sweep like ``scene.backdrop`` for any wall/floor colours and horizon."""
    y = np.linspace(0, 1, size, dtype=np.float32)[:, None]
    t = np.clip((y - (horizon - 0.08)) / 0.16, 0, 1)
    t = t * t * (3 - 2 * t)
    col = np.array(wall, np.float32) * (1 - t) + np.array(floor, np.float32) * t
    x = np.linspace(-1, 1, size, dtype=np.float32)[None, :]
    shade_ = (1 - 0.06 * np.clip(1 - y / 0.5, 0, 1)) * (1 - 0.05 * x * x)
    img = (col[:, None, :] * shade_[..., None]).clip(0, 255).astype(np.uint8)
    return Image.fromarray(np.ascontiguousarray(img), "RGB")


def _product(cat: str, style, fabric, rng: random.Random, pw: float, ph: float) -> Image.Image:
    """The product on its own RGBA layer (2× supersampled, then reduced), as the catalogue draws it."""
    pad = 4
    lw_, lh_ = int(pw + 2 * pad), int(ph + 2 * pad)
    state = rng.getstate()
    for ss in (2, 4):  # painters sized for 512 px frames can draw a degenerate detail when small
        layer = Image.new("RGBA", (lw_ * ss, lh_ * ss), style.floor + (0,))
        try:
            PAINTERS[cat](Painter(ImageDraw.Draw(layer), pad * ss, pad * ss, pw * ss, ph * ss, style, rng, fabric))
            break
        except ValueError:  # Pillow rejects a rounded rectangle smaller than its radius
            rng.setstate(state)
    else:
        raise ValueError(f"{cat} could not be drawn at {pw:.0f}×{ph:.0f} px")
    return Image.merge("RGBA", [band.reduce(ss) for band in layer.split()])


def _shadow(canvas: Image.Image, box, strength: int) -> None:
    """A soft contact shadow: a blurred ellipse, drawn and blurred on its own region only."""
    x0, y0, x1, y1 = (int(v) for v in box)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return
    radius = max(1.0, (y1 - y0) / 3)
    pad = int(3 * radius) + 1  # the blur's reach
    m = Image.new("L", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), 0)
    ImageDraw.Draw(m).ellipse([pad, pad, pad + x1 - x0, pad + y1 - y0], fill=strength)
    canvas.paste((40, 36, 32), (x0 - pad, y0 - pad), m.filter(ImageFilter.GaussianBlur(radius)))


def _light(img: Image.Image, rng: random.Random) -> Image.Image:
    """Studio lighting drift: overall gain, a slight warm/cool tint and a soft side light."""
    a = np.asarray(img, dtype=np.float32)
    gain = rng.uniform(0.92, 1.08) * np.array([rng.uniform(0.97, 1.03) for _ in range(3)], np.float32)
    side = np.linspace(-1, 1, a.shape[1], dtype=np.float32)[None, :, None] * rng.uniform(-0.05, 0.05)
    np.multiply(a, gain * (1 + side), out=a)  # one (1, W, 3) factor, applied in place
    return Image.fromarray(np.clip(a, 0, 255, out=a).astype(np.uint8), "RGB")


def _pick(rng: random.Random, core: tuple[str, ...], extra: tuple[str, ...], core_share: float) -> str:
    return rng.choice(core) if (not extra or rng.random() < core_share) else rng.choice(extra)


def caption_for(colour: str, obj: str, rng: random.Random, *, tail_share: float = 0.5) -> str:
    """One caption naming ``colour`` and ``obj``; sometimes with a probe's ``CURRENT:`` URL tail."""
    text = rng.choice(TEMPLATES).format(c=colour, o=obj)
    if rng.random() < tail_share:
        r = rng.random()
        url = (f"/product/{rng.getrandbits(32):08x}" if r < 0.6 else
               f"/category/{rng.choice(sorted(PAINTERS))}" if r < 0.85 else "/")
        text += f" CURRENT: {url}"
    return text


def plain_caption(cat: str, style: str, rng: random.Random) -> str:
    """A caption naming only the product (for cue-free scenes)."""
    return rng.choice(PLAIN_TEMPLATES).format(cat=CATEGORY_WORDS.get(cat, cat), style=style.replace("_", " "))


def hard_negatives(colour: str, obj: str, rng: random.Random, n: int = 2) -> tuple[str, ...]:
    """``n`` captions with the same object in another colour and ``n`` with the same colour on another object."""
    colours = rng.sample([c for c in PALETTE if c != colour], n)
    objs = rng.sample([o for o in VOCAB if o != obj], n)
    return tuple(f"product with {c} {obj}" for c in colours) + tuple(f"product with {colour} {o}" for o in objs)


def render_sample(seed: int, index: int, size: int = 192, *, cue: tuple[str, str] | None = None) -> TrainSample:
    """Sample ``index`` of the training stream ``seed`` at ``size`` px (``cue`` forces (object, colour))."""
    rng = sample_rng(seed, index)
    S = size
    style = STYLES[rng.choice(sorted(STYLES))]
    if rng.random() < 0.5:  # backdrop outside the ten styles' sweeps
        style = replace(style, wall=_jitter(style.wall, rng, 40), floor=_jitter(style.floor, rng, 40))
    cat = rng.choice(sorted(PAINTERS))
    fabric = (rng.choice(style.fabrics) if rng.random() < 0.6 else
              RAMPS[rng.choice(PALETTE)][1] if rng.random() < 0.5 else
              tuple(rng.randrange(256) for _ in range(3)))
    has_cue = cue is not None or rng.random() >= CUE_FREE_SHARE
    beside = rng.random() < 0.55  # the catalogue's layout: cue on the floor in the product's free side
    wf, hf = SIZES[cat]
    scale = rng.uniform(0.88, 1.02) if beside else rng.uniform(0.55, 1.05)
    pw, ph = wf * S * scale * rng.uniform(0.9, 1.06), hf * S * scale * (style.low if cat in ("chair", "sofa", "table") else 1)
    right = rng.random() < 0.5
    if beside:
        zone = (0.04 * S, 0.66 * S) if right else (0.34 * S, 0.96 * S)
        px0 = (zone[0] + zone[1]) / 2 - pw / 2 + rng.uniform(-0.04, 0.04) * S
    else:
        px0 = rng.uniform(-0.1 * pw, S - 0.9 * pw)
    floor = rng.uniform(0.86, 0.94)
    bottom = floor * S if cat != "wall_art" else rng.uniform(0.5, 0.66) * S
    layer = _product(cat, style, fabric, rng, pw, ph)
    img = _backdrop(style.wall, style.floor, S, rng.uniform(HORIZON - 0.06, HORIZON + 0.06))
    ox, oy = int(round(px0 - 4)), int(round(bottom - ph - 4))
    if cat != "wall_art":
        bb = layer.getbbox() or (0, 0, layer.width, layer.height)
        _shadow(img, (ox + bb[0], bottom - 0.03 * S, ox + bb[2], bottom + 0.035 * S), 110)
    img.paste(layer, (ox, oy), layer)
    pbox = (ox, oy, ox + layer.width, oy + layer.height)
    if not has_cue:
        return TrainSample(_light(img, rng), plain_caption(cat, style.name, rng), (), -1, -1, cat, style.name, None)
    obj, colour = cue or (_pick(rng, CUE_OBJECTS, tuple(EXTRA_OBJECTS), CUE_VOCAB_SHARE),
                          _pick(rng, CUE_COLORS, tuple(EXTRA_RAMPS), CUE_PALETTE_SHARE))
    box = int(round(S * (0.23 * rng.uniform(0.85, 1.1) if beside else rng.uniform(0.12, 0.32))))
    spr = sprite(obj, colour, max(8, box))
    m = int(0.03 * S)
    if beside:
        lo, hi = (pbox[2] + m, S - m - spr.width) if right else (m, pbox[0] - m - spr.width)
        cx = int(rng.uniform(lo, hi)) if hi > lo else int(rng.uniform(m, S - m - spr.width))
        cy = int(FLOOR * S + rng.uniform(0.0, 0.04) * S - spr.height)
    else:
        cx, cy = int(rng.uniform(m, S - m - spr.width)), int(rng.uniform(m, S - m - spr.height))
    cy = max(m, min(cy, S - m - spr.height))
    _shadow(img, (cx + 0.1 * spr.width, cy + spr.height - 0.02 * S, cx + 0.9 * spr.width, cy + spr.height + 0.02 * S), 80)
    img.paste(spr, (cx, cy), spr)
    caption = caption_for(colour, obj, rng)
    return TrainSample(_light(img, rng), caption, hard_negatives(colour, obj, rng), VOCAB.index(obj),
                       PALETTE.index(colour), cat, style.name, (cx, cy, cx + spr.width, cy + spr.height))


__all__ = ["CUE_OBJECTS", "EXTRA_OBJECTS", "EXTRA_RAMPS", "PALETTE", "SALT", "TrainSample", "VOCAB",
           "caption_for", "hard_negatives", "plain_caption", "render_sample", "sample_rng", "sprite"]
