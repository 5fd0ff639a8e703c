"""Drawing primitives: the cached-corner bubble is Pillow's rounded rectangle, pixel for pixel."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from vismem.memory.dialogue.draw import bubble


@pytest.mark.parametrize("radius", [0, 1, 2, 5, 12, 13, 20])
def test_bubble_is_pillows_rounded_rectangle(radius):
    sizes = sorted(set(range(1, 4 * radius + 12)) | {4 * radius + 40, 333})
    for w in sizes:
        for h in sizes[:: 1 if radius == 12 else 3]:
            ours = Image.new("L", (w + 5, h + 5), 3)  # a margin: nothing may be drawn outside the box
            pillows = ours.copy()
            box = (2, 3, 2 + w - 1, 3 + h - 1)
            ImageDraw.Draw(pillows).rounded_rectangle(box, radius, fill=77)
            bubble(ImageDraw.Draw(ours), box, radius, 77)
            assert ours.tobytes() == pillows.tobytes(), (radius, w, h)
