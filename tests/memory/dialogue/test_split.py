"""A turn too tall for any shot (``oversize: grow``) is split over several shots of bounded height."""

from __future__ import annotations

import io
import random

from PIL import Image

from vismem.env.dialogue import Conversation, Session, Turn
from vismem.memory.dialogue import load_variant, plan_session, session_units
from vismem.memory.dialogue.pack import GROW_LIMIT
from vismem.memory.dialogue.readrate import session_drawn_texts


def _conv(big: str, dataset: str = "longmemeval") -> Conversation:
    turns = (Turn("s:1", "User", "please summarise this", role="user"),
             Turn("s:2", "Assistant", big, role="assistant"),
             Turn("s:3", "User", "thanks", role="user"), Turn("s:4", "Assistant", "welcome", role="assistant"))
    s = Session("s", 1, "2023/05/20 (Sat) 02:21", None, turns)
    return Conversation(dataset, "q1", ("Assistant", "User"), (s,))


def _text_200kb() -> str:
    rng = random.Random(7)
    vocab = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    paras = []
    while sum(len(p) for p in paras) < 200_000:
        paras.append(" ".join(f"{rng.choice(vocab)}{rng.randrange(1000)}" for _ in range(rng.randrange(20, 120))))
    return "\n\n".join(paras)


def test_a_200kb_turn_is_split_over_bounded_shots_with_all_its_text():
    big = _text_200kb()
    conv = _conv(big)
    v = load_variant("memshot")
    units = session_units(conv, conv.sessions[0], v)
    assert len(units) > 20
    for u in units:
        assert Image.open(io.BytesIO(u.image)).size == (948, u.height)
        assert u.height <= v.max_height and not u.overflow  # pieces fit a shot: none grows
    # Every word of the turn is drawn, in order, once across the shots' new (non-repeated) pairs.
    lay, spans = plan_session(conv, conv.sessions[0], v)
    drawn: list[str] = []
    for sp in spans:
        for p in lay.pairs[sp.start + sp.overlap:sp.end]:
            for m in p.messages:
                if m.dia_id == "s:2":
                    drawn += [w for ln in m.lines for w in ln]
    assert drawn == big.split()
    # The evidence mapping marks every shot that holds part of the turn, and only those.
    holding = [u for u in units if any(m.dia_id == "s:2" for p in lay.pairs[u.pair_start:u.pair_end]
                                       for m in p.messages)]
    assert len(holding) >= 20 and all("s:2" in u.dia_ids for u in holding)
    assert all(len(set(u.dia_ids)) == len(u.dia_ids) for u in units)
    # A piece's text is its own lines, not the whole 200 KB turn; the read-rate source matches the drawing.
    assert max(len(u.text) for u in units) < 10_000
    assert sum(len(u.text.split()) for u in holding) >= len(big.split())
    assert len(session_drawn_texts(conv, conv.sessions[0], v)) == len(units)


def test_a_pair_within_the_grow_limit_still_grows_as_the_paper_packs_longmemeval():
    big = " ".join(["word"] * 1500)
    conv = _conv(big)
    v = load_variant("memshot")
    units = session_units(conv, conv.sessions[0], v)
    assert units[0].overflow and v.max_height < units[0].height <= GROW_LIMIT * v.max_height
    assert units[0].dia_ids == ("s:1", "s:2")


def test_the_no_render_variant_writes_the_pieces_as_text():
    big = _text_200kb()
    conv = _conv(big)
    units = session_units(conv, conv.sessions[0], load_variant("no-render"))
    assert all(u.image is None for u in units) and len(units) > 20
    joined = " ".join(u.text for u in units)
    for word in big.split()[::500]:
        assert word in joined


def test_a_200kb_turn_renders_in_bounded_memory():
    # One 948 x 54,000 px shot of this turn peaked at 6.4 GB; its pieces are drawn one shot at a
    # time, so the render's peak stays near the interpreter's own (measured in a fresh process).
    import subprocess
    import sys
    from pathlib import Path

    script = ("import resource\n"
              "from tests.memory.dialogue.test_split import _conv, _text_200kb\n"
              "from vismem.memory.dialogue import load_variant, session_units\n"
              "conv = _conv(_text_200kb())\n"
              "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "units = session_units(conv, conv.sessions[0], load_variant('memshot'))\n"
              "print(len(units), before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    n, before_kb, peak_kb = map(int, out.stdout.split())
    assert n > 20 and peak_kb - before_kb < 300 * 1024, (before_kb, peak_kb)
