"""Text that is not Latin: CJK from the fallback font (not boxes), code keeps its indentation,
the read rate counts non-Latin words, and Latin text draws exactly as without a fallback."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageFont

from vismem.env.dialogue.lme_synth import CODE, NON_LATIN
from vismem.env.dialogue.model import Conversation, Session, Turn
from vismem.memory.dialogue.glyphs import Glyphs
from vismem.memory.dialogue.layout import get_font, line_width, wrap_measured
from vismem.memory.dialogue.readrate import reading, session_drawn_texts, words
from vismem.memory.dialogue.render import session_units
from vismem.memory.dialogue.style import Style
from vismem.memory.dialogue.variants import load_variant

STYLE = Style()
pytestmark = pytest.mark.skipif(not Path(STYLE.font_cjk).is_file(),
                                reason="CJK font missing: run scripts/setup.sh (fonts-wqy-microhei)")


def _ft(path: str, size: int = 15) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size, layout_engine=ImageFont.Layout.BASIC)


def _bytes(core) -> bytes:
    return Image.Image()._new(core).tobytes()


def _glyphs(fallback: bool) -> Glyphs:
    f = get_font(STYLE.font_regular, STYLE.body_size, fallback=STYLE.font_cjk if fallback else None)
    return f.glyphs


@pytest.mark.parametrize("ch", ["我", "は", "한"])
def test_cjk_glyph_comes_from_the_fallback(ch):
    g, plain = _glyphs(True).glyph(ch), _glyphs(False).glyph(ch)
    cjk = _ft(STYLE.font_cjk)
    mask, _ = cjk.getmask2(ch, mode="L")
    box = mask.getbbox()
    assert _bytes(g[0]) == _bytes(mask.crop(box))  # the fallback's ink ...
    assert _bytes(g[0]) != _bytes(plain[0])  # ... not the body font's box
    assert g[5] == round(cjk.getlength(ch) * 64)
    # baseline shared: the ink is moved down by the difference of the two ascents
    shift = _ft(STYLE.font_regular).getmetrics()[0] - cjk.getmetrics()[0]
    assert g[2] == cjk.getmask2(ch, mode="L")[1][1] + box[1] + shift


@pytest.mark.parametrize("word", ["Hello,", "AVAVAV", "café", "naïve—“quoted”…", "ff", "e\u0301"])
def test_latin_words_draw_as_without_a_fallback(word):
    a, b = _glyphs(True), _glyphs(False)
    assert a.length(word) == b.length(word)
    ma, mb = a.mask(word), b.mask(word)
    assert ma[1:] == mb[1:] and _bytes(ma[0]) == _bytes(mb[0])


def test_mixed_word_has_both_fonts_ink():
    g = _glyphs(True)
    assert g.mixed("東京Tokyo") and not g.mixed("Tokyo")
    assert g.length("東京Tokyo") == g.length("東京") + g.length("Tokyo")  # no kerning across fonts
    mask, dx, dy = g.mask("東京Tokyo")
    assert Image.Image()._new(mask).getbbox() is not None


def test_code_keeps_its_indentation():
    font = get_font(STYLE.font_regular, STYLE.body_size)
    lines, widest = wrap_measured(CODE, font, 600)
    starts = [ln[0] if ln else "" for ln in lines]
    assert "    " in starts and "        " in starts  # 4 and 8 spaces
    body = lines[starts.index("        ")]
    assert body[1:] == ("s", "+=", "x") and line_width(body, font) == pytest.approx(
        8 * font.space + line_width(("s", "+=", "x"), font))
    assert lines[-1] == ("    ", "python", "-m", "build")  # a tab is four spaces
    assert widest == max(line_width(ln, font) for ln in lines)


def test_indented_long_lines_wrap_under_their_indent():
    font = get_font(STYLE.font_regular, STYLE.body_size)
    lines, widest = wrap_measured("      " + "word " * 60 + "x" * 200, font, 300)
    assert len(lines) > 3 and all(ln[0] == "      " for ln in lines) and widest <= 300


def test_single_leading_space_is_prose_as_before():
    font = get_font(STYLE.font_regular, STYLE.body_size)
    assert wrap_measured("Hi.\n I am here.", font, 600)[0] == [("Hi.",), ("I", "am", "here.")]


def test_readrate_counts_non_latin_words():
    assert words("我去了北京。") == ["我", "去", "了", "北", "京"]
    assert words("저는 한강에서, Привет!") == ["저는", "한강에서", "привет"]
    assert words("Straße café") == ["strae", "cafe"]  # Latin: the ASCII fold as before
    r = reading("我去了北京 东京", "我去了北 东京")
    assert (r.n_words, r.n_read, r.missed) == (7, 6, ("京",))


def _conv(texts: list[str]) -> Conversation:
    turns = tuple(Turn(dia_id=f"S1:{i + 1}", speaker=("User", "Assistant")[i % 2], text=t,
                       role=("user", "assistant")[i % 2]) for i, t in enumerate(texts))
    sess = Session(session_id="S1", index=1, date_text="2023/05/20 (Sat) 02:21", date=None, turns=turns)
    return Conversation(dataset="longmemeval", conversation_id="c", speakers=("Assistant", "User"), sessions=(sess,))


def test_cjk_shots_are_drawn_and_read_rate_covers_them():
    conv = _conv([NON_LATIN[0], NON_LATIN[1], NON_LATIN[2], CODE])
    v = load_variant("memshot")
    boxes = v.model_copy(update={"style": Style(font_cjk="/nonexistent/cjk.ttc")})
    drawn = [u.image for u in session_units(conv, conv.sessions[0], v)]
    tofu = [u.image for u in session_units(conv, conv.sessions[0], boxes)]
    assert drawn != tofu  # the fallback draws glyphs where the body font has boxes
    assert v.style.digest != boxes.style.digest  # the fallback font is part of the look
    text = session_drawn_texts(conv, conv.sessions[0], v)[0]
    toks = words(text)
    assert "北" in toks and "東" in toks and "한강에서" in toks
    rgb = Image.open(io.BytesIO(drawn[0])).convert("RGB")
    assert rgb.width == STYLE.width


def test_ocr_read_rate_sees_chinese_only_with_the_fallback_font():
    """The read-rate check on a Chinese shot: the OCR stand-in (PP-OCR, a Chinese + English
    recogniser) reads the characters the fallback draws, and little where they are boxes."""
    from vismem.serve.embedders.ocr import OCR_ENGINES

    conv = _conv([NON_LATIN[0], "我们明天在北京见面吧。"])
    v = load_variant("memshot")
    boxes = v.model_copy(update={"style": Style(font_cjk="/nonexistent/cjk.ttc")})
    src = session_drawn_texts(conv, conv.sessions[0], v)[0]
    ocr = OCR_ENGINES.build("rapidocr-lines")
    drawn = reading(src, ocr.read(session_units(conv, conv.sessions[0], v)[0].image))
    tofu = reading(src, ocr.read(session_units(conv, conv.sessions[0], boxes)[0].image))
    assert drawn.n_words > 30 and drawn.rate >= 0.9 and tofu.rate < 0.5
