"""The OCR stand-in (``ocr-minilm``): it reads a rendered shot, embeds like MiniLM, fails clearly.

OCR runs on two small images only (a one-shot conversation and a large-text card), so the
module takes a few seconds; the conversation-scale numbers are the ``memshot-ocr`` benchmark's.
"""

from __future__ import annotations

import io
import re
from datetime import datetime

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from vismem.env.dialogue import Conversation, Session, Turn
from vismem.memory.dialogue import load_variant, session_units
from vismem.memory.dialogue.readrate import read_rate, session_drawn_texts, words
from vismem.serve.build import build_embedder
from vismem.serve.embed import Embedder, embed_queries
from vismem.serve.embedders import ocr_pixels as px
from vismem.serve.embedders.ocr import OCR_ENGINES, OcrEngine, RapidLineOcr, build_ocr_engine


def conversation() -> Conversation:
    turns = (
        Turn("D1:1", "Ana", "Hi Ben! I finally adopted a cat last Sunday."),
        Turn("D1:2", "Ben", "That's great news! What's her name and how old is she?"),
        Turn("D1:3", "Ana", "Her name is Miso. Here she is.", image_caption="a photo of a grey cat on a sofa"),
        Turn("D1:4", "Ben", "Adorable. Let's meet next week so I can say hi to Miso."),
    )
    s = Session("session_1", 1, "4:04 pm on 20 January, 2023", datetime(2023, 1, 20, 16, 4), turns)
    return Conversation("locomo", "tiny", ("Ana", "Ben"), (s,))


@pytest.fixture(scope="module")
def shot():
    conv = conversation()
    v = load_variant("memshot")
    (unit,) = session_units(conv, conv.sessions[0], v)
    (drawn,) = session_drawn_texts(conv, conv.sessions[0], v)
    return unit.image, drawn


@pytest.fixture(scope="module")
def embedder():
    return build_embedder({"name": "ocr-minilm", "args": {"ocr": {"name": "rapidocr-lines", "args": {"threads": 1}}}})


def test_reads_a_rendered_shot_speakers_and_words(embedder, shot):
    image, drawn = shot
    text = embedder.read_images([image])[0]
    toks = words(text)
    assert "ana" in toks and "ben" in toks  # both speakers' names
    assert read_rate(drawn, text) >= 0.95, text
    # Right-hand bubbles are white on blue: polarity handling must read them too.
    assert {"adorable", "meet", "week"} <= set(toks), text
    assert "and shared a photo of a grey cat" in text.lower()  # caption words keep their spaces
    assert {"january", "2023"} <= set(toks)  # header band (light on dark)


def test_engine_is_deterministic_and_decodes_palette_shots(shot):
    image, _ = shot
    cold = RapidLineOcr(threads=1, cache_lines=0)
    assert isinstance(cold, OcrEngine)
    first = cold.read(image)
    assert cold.read(Image.open(io.BytesIO(image))) == first  # a PIL palette image: same text
    cached = RapidLineOcr(threads=1, batch_size=3)  # other batches, same per-line tensors
    assert cached.read(image) == first and cached.read(image) == first
    assert cached.stats["cached"] >= cached.stats["lines"] // 2  # the second read hit the cache


def test_embedder_contract(embedder, shot):
    image, drawn = shot
    assert isinstance(embedder, Embedder)
    assert embedder.stand_in is True and embedder.stands_in_for == "qwen3-vl-embedding"
    assert embedder.dim == 384 and embedder.name == "ocr-minilm:rapidocr-lines+all-MiniLM-L6-v2"
    # With the shot's content hash, the OCR text's cache key (wheel version included).
    assert re.fullmatch(r"rapidocr-lines/r1/1\.4\.\d+/h48-p4-g4-w128", embedder.ocr_key), embedder.ocr_key
    v = embedder.embed_images([image, image])
    assert v.shape == (2, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(v[0], v[1], atol=1e-6)
    np.testing.assert_allclose(embedder.embed_ocr_texts(embedder.read_images([image])), v[:1], atol=1e-5)
    t = embedder.embed_texts([drawn, "Quarterly tax filing deadline."])
    assert t.shape == (2, 384)
    assert float(v[0] @ t[0]) > 0.9 > float(v[0] @ t[1]) + 0.3  # it reads what the shot says
    q = embed_queries(embedder, ["What is the name of Ana's cat?"])
    np.testing.assert_allclose(q, embedder.embed_texts(["What is the name of Ana's cat?"]), atol=1e-6)
    assert embedder.embed_images([]).shape == (0, 384) and embedder.embed_texts([]).shape == (0, 384)
    paired = embedder.embed_images([image], texts=["Ana and Ben"])
    assert paired.shape == (1, 384) and not np.allclose(paired, v[:1])
    with pytest.raises(ValueError, match="1 texts for 2 images"):
        embedder.embed_images([image, image], texts=["x"])


def test_malformed_image_is_a_clear_error(embedder, shot):
    with pytest.raises(ValueError, match=r"image 1: cannot decode image \(12 bytes\)"):
        embedder.embed_images([shot[0], b"not an image"])
    with pytest.raises(TypeError, match="encoded bytes or a PIL.Image"):
        embedder.read_images(["/path/as/str.png"])
    with pytest.raises(ValueError, match="unknown OCR engine 'nope'"):
        build_ocr_engine("nope")
    assert {"rapidocr", "rapidocr-lines"} <= set(OCR_ENGINES.names())


def test_large_text_falls_back_to_the_detector():
    img = Image.new("RGB", (560, 140), "white")
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 64)
    ImageDraw.Draw(img).text((20, 30), "HELLO WORLD", font=font, fill="black")
    eng = RapidLineOcr(threads=1)
    text = eng.read(img)
    assert eng.stats["tall"] == 1 and {"hello", "world"} <= set(words(text)), text


def test_pixel_helpers():
    # Two "words" of ink separated by a 6-px gap, letters 2 px apart.
    ink = np.full((10, 40), 255, np.uint8)
    for x0 in (2, 6, 16, 20):
        ink[2:8, x0:x0 + 2] = 0
    assert px.word_gaps(ink, 4) == [(8, 16)]
    assert px.respace([("a", 3), ("b", 7), ("c", 17), ("d", 21)], [(8, 16)]) == "ab cd"
    assert px.respace([("2", 3), (":", 7), ("3", 17)], [(8, 16)]) == "2:3"  # times stay whole
    assert px.respace([("2", 1), (":", 12), ("3", 17)], [(3, 10), (13, 16)]) == "2:3"
    assert px.respace([("a", 3), (":", 7), ("b", 17)], [(8, 16)]) == "a: b"
    assert px.respace([("a", 3), (" ", 5), (" ", 6), ("b", 7)], []) == "a b"
    assert px.fix_zero_letter("13 0ctober 2023 g00d") == "13 October 2023 g00d"
    assert px.fix_zero_letter("c0ol") == "cool"
    rgb = np.zeros((4, 4, 3), np.uint8)
    rgb[1:3, 1:3] = 255
    blocks, canvas = px.text_blocks(rgb)
    assert [(b.y0, b.y1, b.x0, b.x1) for b in blocks] == [(1, 3, 1, 3)] and canvas.tolist() == [0, 0, 0]
    light_on_dark = np.full((6, 6, 3), 30, np.uint8)
    light_on_dark[2:4, 2:4] = 250
    assert px.ink_map(light_on_dark, canvas=np.array([200, 200, 200]))[2, 2] == 0  # text → dark ink


def test_reader_ocr_key_is_known_before_any_model_loads(embedder):
    from vismem.serve.embedders.ocr import reader_ocr_key

    assert reader_ocr_key({"name": "ocr-minilm", "args": {}}) == embedder.ocr_key
    spec = {"name": "ocr-minilm", "args": {"ocr": {"name": "rapidocr-lines", "args": {"word_gap": 6, "threads": 1}}}}
    assert reader_ocr_key(spec) == build_ocr_engine(spec["args"]["ocr"]).key != embedder.ocr_key
    assert reader_ocr_key({"name": "minilm", "args": {}}) is None
