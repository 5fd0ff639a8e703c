"""The look of a memory shot: sizes, fonts and colours, as one frozen, described model.

The paper fixes the width (948 px) and the maximum height (768 px) and describes a header with
the session identifier and timestamp above a speaker-aware chat region (left/right alignment,
distinct bubble styles, the speaker's name on each message). Its Figure 5 parameter panel is an
image we cannot read, so the remaining values below are ours, chosen for legibility at the
resolution Qwen3-VL sees (15 px body text, about 80 characters per bubble line, four LoCoMo
turn-pairs per 768 px shot) and recorded with
every shot (the ``style`` hash in the units table).
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property

from pydantic import Field, model_validator

from vismem.core.config import Frozen

DEJAVU = "/usr/share/fonts/truetype/dejavu"
#: Chinese, Japanese and Korean in one small font (Debian fonts-wqy-microhei, 1.6 MB; Noto CJK is 56 MB).
WQY_MICROHEI = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"


class Style(Frozen):
    """Geometry, fonts and colours of a rendered shot."""

    width: int = Field(948, ge=320, description="Image width in pixels (the paper: 948).")
    font_regular: str = Field(f"{DEJAVU}/DejaVuSans.ttf", description="Body text font file (bundle-free: Debian fonts-dejavu-core).")
    font_bold: str = Field(f"{DEJAVU}/DejaVuSans-Bold.ttf", description="Font of speaker names and the session label.")
    font_italic: str = Field(f"{DEJAVU}/DejaVuSans-Oblique.ttf", description="Font of image captions ('and shared ...').")
    font_emoji: str = Field("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf",
                            description="Colour emoji font for characters the body font lacks (Debian fonts-noto-color-emoji); "
                            "a missing file leaves them as the body font's box.")
    font_cjk: str = Field(WQY_MICROHEI, description="Fallback font for characters the text fonts lack "
                          "(Chinese, Japanese, Korean; Debian fonts-wqy-microhei); a missing file leaves them as "
                          "the text font's box.")
    emoji_size: int = Field(17, ge=6, description="Side of an emoji's square in px (body lines are body_line tall).")
    body_size: int = Field(15, ge=8, description="Body text size in px.")
    body_line: int = Field(20, ge=8, description="Body line height in px.")
    name_size: int = Field(13, ge=8, description="Speaker name size in px.")
    name_line: int = Field(17, ge=8, description="Speaker name line height in px (name sits above its bubble).")
    header_size: int = Field(19, ge=8, description="Header text size in px.")
    header_height: int = Field(46, ge=16, description="Height of the header band in px.")
    margin_x: int = Field(22, ge=0, description="Horizontal page margin in px.")
    chat_pad_top: int = Field(12, ge=0, description="Space between header and first message in px.")
    chat_pad_bottom: int = Field(12, ge=0, description="Space below the last message in px.")
    bubble_max_frac: float = Field(0.7, gt=0.2, le=1.0, description="Maximum bubble width as a fraction of the page width.")
    bubble_pad_x: int = Field(14, ge=0, description="Horizontal padding inside a bubble in px.")
    bubble_pad_y: int = Field(7, ge=0, description="Vertical padding inside a bubble in px.")
    bubble_radius: int = Field(12, ge=0, description="Bubble corner radius in px.")
    name_gap: int = Field(2, ge=0, description="Gap between a speaker name and its bubble in px.")
    message_gap: int = Field(6, ge=0, description="Gap between two messages of one turn-pair in px.")
    pair_gap: int = Field(10, ge=0, description="Gap between two turn-pairs in px.")
    canvas: str = Field("#F1F3F6", description="Chat background colour.")
    name_color: str = Field("#4B5563", description="Speaker name colour.")
    header_bg: str = Field("#1F2A44", description="Header band colour.")
    header_fg: str = Field("#FFFFFF", description="Header text colour.")
    left_bg: str = Field("#FFFFFF", description="Bubble colour of the left speaker.")
    left_fg: str = Field("#111827", description="Text colour of the left speaker.")
    left_caption: str = Field("#6B7280", description="Caption colour in left bubbles.")
    right_bg: str = Field("#2563EB", description="Bubble colour of the right speaker.")
    right_fg: str = Field("#FFFFFF", description="Text colour of the right speaker.")
    right_caption: str = Field("#DBEAFE", description="Caption colour in right bubbles.")

    @model_validator(mode="after")
    def _bottom_holds_gap(self) -> "Style":
        # Each turn-pair strip carries its trailing pair gap; the bottom padding must absorb it.
        if self.chat_pad_bottom < self.pair_gap:
            raise ValueError("chat_pad_bottom must be >= pair_gap")
        return self

    @cached_property
    def digest(self) -> str:
        """Short hash of every field plus the font files' bytes (recorded with each shot)."""
        h = hashlib.sha256(json.dumps(self.model_dump(), sort_keys=True).encode())
        for p in (self.font_regular, self.font_bold, self.font_italic, self.font_emoji, self.font_cjk):
            try:
                with open(p, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
            except FileNotFoundError:  # only the optional emoji and CJK fonts may be absent
                if p not in (self.font_emoji, self.font_cjk):
                    raise
                h.update(b"no-emoji-font" if p == self.font_emoji else b"no-cjk-font")
        return h.hexdigest()[:16]

    @property
    def bubble_max(self) -> int:
        return int(self.width * self.bubble_max_frac)
