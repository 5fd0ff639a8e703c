"""The action parser: the official DMV-Bench cases (expected values produced by running the
official ``dualmem/agent/actions.py`` on these inputs) plus malformed replies."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vismem.env.actions import Action, add_to_wishlist, click_index, done, navigate, parse_action

# (reply, (type, url, url_hash, index, raw)); the official "noop" is our "invalid".
CASES = [
    ('Thought: go\nAction: navigate("/category/chair")', ("navigate", "/category/chair", None, None, 'navigate("/category/chair")')),
    ("Action: navigate(/collection/chair-modern)", ("navigate", "/collection/chair-modern", None, None, "navigate(/collection/chair-modern)")),
    ("Action: navigate('/product/df5b5fde')", ("navigate", "/product/df5b5fde", None, None, "navigate('/product/df5b5fde')")),
    ("Thought: pick\nAction: click_index(3)", ("click_index", None, None, 3, "click_index(3)")),
    ("Action: click_index([7])", ("click_index", None, None, 7, "click_index([7])")),
    ("Action: click_index 2", ("click_index", None, None, 2, "click_index 2")),
    ("Action: click_index(12)", ("click_index", None, None, 1, "click_index(12)")),  # official: one digit
    ("Action: CLICK_INDEX(4)", ("click_index", None, None, 4, "CLICK_INDEX(4)")),
    ("Action: add_to_wishlist", ("add_to_wishlist", None, None, None, "add_to_wishlist")),
    ("Action: add to wishlist", ("add_to_wishlist", None, None, None, "add to wishlist")),
    ("Action: wishlist(df5b5fde)", ("add_to_wishlist", None, None, None, "wishlist(df5b5fde)")),
    ("Action: add_to_wishlist click df5b5fde", ("add_to_wishlist", None, "df5b5fde", None, "add_to_wishlist click df5b5fde")),
    ("Action: done", ("done", None, None, None, "done")),
    ("Action: I am DONE here", ("done", None, None, None, "I am DONE here")),
    ("Action: click df5b5fde", ("click_product", "/product/df5b5fde", "df5b5fde", None, "click df5b5fde")),
    ('Action: click_product("/product/A0682355")', ("click_product", "/product/A0682355", "A0682355", None, 'click_product("/product/A0682355")')),
    ('Thought: I will click_index(1)\nAction: navigate("/cart")', ("navigate", "/cart", None, None, 'navigate("/cart")')),
    ("Action: click_index(1)\nThought: hmm\nAction: done", ("done", None, None, None, "done")),  # last Action line
    ('navigate("/wishlist") then done', ("navigate", "/wishlist", None, None, 'navigate("/wishlist") then done')),
    ("I think we are done.", ("done", None, None, None, "I think we are done.")),
    ("Thought: the product is df5b5fde\nAction: click(df5b5fde)", ("click_product", "/product/df5b5fde", "df5b5fde", None, "click(df5b5fde)")),
    ('Action: done navigate("/")', ("done", None, None, None, 'done navigate("/")')),  # official: "/" alone never parses
    ('Action:   navigate ( "/search?q=lamp" )', ("navigate", "/search?q=lamp", None, None, 'navigate ( "/search?q=lamp" )')),
    ("action : Click_Index(0)", ("click_index", None, None, 0, "Click_Index(0)")),
    # malformed -> invalid, raw text kept
    ("", ("invalid", None, None, None, "")),
    ("Action: scroll down", ("invalid", None, None, None, "scroll down")),
    ("Action:", ("invalid", None, None, None, "Action:")),
    ('Action: navigate("category/chair")', ("invalid", None, None, None, 'navigate("category/chair")')),
    ('Action: navigate("https://evil.com/x")', ("invalid", None, None, None, 'navigate("https://evil.com/x")')),
    ("Action: click_index(x)", ("invalid", None, None, None, "click_index(x)")),
    ("Thought: undone work\nAction: wait", ("invalid", None, None, None, "wait")),
]


@pytest.mark.parametrize("reply,expected", CASES)
def test_parse_table(reply, expected):
    a = parse_action(reply)
    assert (a.type, a.url, a.url_hash, a.index, a.raw) == expected


def test_none_and_garbage_never_raise():
    assert parse_action(None).type == "invalid"
    for junk in ["\x00\x01", "Action: " + "(" * 500, "🙂" * 100, "Action: navigate(\"/" + "a" * 10_000]:
        assert isinstance(parse_action(junk), Action)


def test_constructors_round_trip_through_the_parser():
    for a in (navigate("/collection/chair-modern"), click_index(4), add_to_wishlist(), done()):
        b = parse_action(f"Thought: x\nAction: {a}")
        assert (b.type, b.url, b.index) == (a.type, a.url, a.index)
    assert done().terminal and add_to_wishlist().terminal and not click_index(0).terminal


OFFICIAL = Path("/work/.mirror/yyyujintang+DMV-Bench/repo")


@pytest.mark.skipif(not OFFICIAL.exists(), reason="official DMV-Bench mirror not available")
def test_differential_against_official_parser(tmp_path):
    """Run the official parser (from the read-only mirror) on every case and on fuzzed replies."""
    src = subprocess.run(["git", "-C", str(OFFICIAL), "show", "HEAD:dualmem/agent/actions.py"],
                         capture_output=True, text=True, check=True).stdout
    mod: dict = {}
    exec(compile(src, "official_actions.py", "exec"), mod)  # noqa: S102 - trusted local mirror
    import random

    rng = random.Random(0)
    parts = ["Action:", "Thought:", "navigate(", '"/', "/product/", "df5b5fde", "click_index(", "3", ")",
             "done", "add_to_wishlist", "wishlist(", "click ", "\n", " ", "x", "[", "]", "'", "/cart"]
    replies = [c[0] for c in CASES] + ["".join(rng.choice(parts) for _ in range(rng.randint(1, 12)))
                                       for _ in range(2000)]
    for r in replies:
        o, a = mod["parse_react_response"](r), parse_action(r)
        assert ({"noop": "invalid"}.get(o.type, o.type), o.url, o.url_hash, o.index, o.raw) == \
            (a.type, a.url, a.url_hash, a.index, a.raw), r
