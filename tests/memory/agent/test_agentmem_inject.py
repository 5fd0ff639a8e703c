"""Injection strings and the memory block, byte-identical to the official renderings (spec §3.4),
and the probe hook (query, fetch 10 / dedupe / keep 5, image order)."""

from __future__ import annotations

from agentmem_fakes import LOCAL, FakeFeatures

from vismem.memory.agent import ArchitectureHook, MemoryItem, Query, build_architecture, recall, with_components
from vismem.memory.agent.inject import INJECTORS, format_block
from vismem.memory.agent.types import entry_url

CAP = "A vintage-style wooden chair.\nA red baseball cap rests on the seat."
I1 = MemoryItem("a7c1e9b2", "blobs/sha256/" + "1" * 64 + ".png", "a chair", CAP, 0, 0)
I2 = MemoryItem("3f88c401", "blobs/sha256/" + "2" * 64 + ".png", "a chair", None, 0, 1)
HEADER = ("2 item(s) recalled from earlier sessions, most relevant first. Any attached memory images appear AFTER "
          "the current-page image, in the order referenced below.")

OFFICIAL = {
    "image_text": HEADER + "\n"
    "  (1) Memory (dual-channel, image + caption) \u2014 product page /product/a7c1e9b2:\n"
    "      Caption: \"A vintage-style wooden chair.\n"
    "      A red baseball cap rests on the seat.\" [memory image 1]\n"
    "  (2) Memory (dual-channel, image + caption) \u2014 product page /product/3f88c401:\n"
    "      Caption: \"a chair\" [memory image 2]",
    "image": HEADER + "\n"
    "  (1) Memory image (visual channel, raw) \u2014 this memory is the product at /product/a7c1e9b2: [memory image 1]\n"
    "  (2) Memory image (visual channel, raw) \u2014 this memory is the product at /product/3f88c401: [memory image 2]",
    "caption": HEADER + "\n"
    "  (1) Memory caption (visual channel summarised as text) (product page /product/a7c1e9b2):\n"
    "      \"A vintage-style wooden chair.\n"
    "      A red baseball cap rests on the seat.\"\n"
    "  (2) Memory caption (visual channel summarised as text) (product page /product/3f88c401):\n"
    "      \"a chair\"",
    "text": HEADER + "\n"
    "  (1) Memory (verbal channel only) (product page /product/a7c1e9b2): \"a chair\"\n"
    "  (2) Memory (verbal channel only) (product page /product/3f88c401): \"a chair\"",
}
RENDER = {name: INJECTORS.build(name) for name in OFFICIAL}


def test_blocks_are_byte_identical_to_the_official_renderings():
    for name, want in OFFICIAL.items():
        text, images = format_block([RENDER[name](I1), RENDER[name](I2)])
        assert text == want, name
        assert images == ([I1.image_key, I2.image_key] if "image" in name else [])


def test_injectors_are_a_named_registry():
    assert INJECTORS.names() == ["caption", "image", "image_text", "text"]


def test_empty_block_and_fallback_texts():
    assert format_block([]) == ("(no memory retrieved this step)", [])
    bare = MemoryItem("abcd1234", None, "", None, 0, 0)
    assert RENDER["caption"](bare).text.endswith(':\n"<no caption>"')
    assert RENDER["image"](bare).image_keys == ()                 # no image, nothing attached
    assert entry_url("col_chair-modern") == "/collection/chair-modern" and entry_url("page_x") == ""


def test_architecture_inject_loads_images_in_reference_order():
    arch = build_architecture(with_components("dualmem", LOCAL), features=FakeFeatures())
    ctx = arch.inject([I1, I2])
    assert ctx.text == OFFICIAL["image_text"]
    assert ctx.images == (f"png:{I1.image_key}".encode(), f"png:{I2.image_key}".encode())
    assert build_architecture(with_components("m2a-lite", LOCAL), features=FakeFeatures()).inject([I1]).images == ()


class _Scripted:
    """A fake architecture whose retrieval returns duplicates, to test the hook's dedupe."""

    def __init__(self, items):
        self.items, self.asked = items, []

    def retrieve(self, query, k):
        self.asked.append((query.text, k))
        return self.items[:k]

    def inject(self, items):
        from vismem.agents.memory import MemoryContext

        return MemoryContext(text=",".join(i.slug for i in items))

    def channel_scores(self, items):
        return [{"fused": float(i.position)} for i in items]


def test_hook_fetches_ten_dedupes_and_keeps_five():
    items = [MemoryItem(s, None, "a chair", None, 0, n) for n, s in enumerate("a a b c b d e f g h i".split())]
    fake = _Scripted(items)
    hook = ArchitectureHook(fake, "red wool scarf")
    ctx = hook.context(spec=None, step=1, url="http://127.0.0.1:9/product/df5b5fde?x=1", subtask="")
    assert fake.asked == [("product with red wool scarf CURRENT: /product/df5b5fde", 10)]
    assert ctx.text == "a,b,c,d,e"
    assert [i.slug for i in hook.last_items] == ["a", "b", "c", "d", "e"]
    assert hook.last_scores == [{"fused": p} for p in (0.0, 2.0, 3.0, 5.0, 6.0)]  # one per kept item
    assert Query.probe("red cap", "/").text == "product with red cap CURRENT: /"
    assert recall(fake, Query("q"), fetch_k=3, keep_k=5) == [items[0], items[2]]
