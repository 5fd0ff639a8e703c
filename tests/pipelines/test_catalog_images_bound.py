"""Official catalogue images are inputs too: one past the pixel bound, or not an image, is a
DataError naming the variant, read from the header before anything is decoded (issue 38)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from vismem.core.errors import DataError
from vismem.pipelines.dmv import catalog_job


def _png(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.new("L", (w, h)).save(buf, format="PNG")
    return buf.getvalue()


def test_an_image_past_the_pixel_bound_names_it(monkeypatch):
    monkeypatch.setattr(catalog_job, "MAX_IMAGE_PIXELS", 64 * 64)
    with pytest.raises(DataError, match=r"variant ab12: 65 x 64 pixels, more than the 4,096"):
        catalog_job._conform(_png(65, 64), 32, "png", 1, "variant ab12")
    assert len(catalog_job._conform(_png(64, 64), 32, "png", 1, "variant ab12")) > 0


def test_bytes_that_are_no_image_are_a_data_error():
    with pytest.raises(DataError, match=r"variant ab12: not a readable image"):
        catalog_job._conform(b"<html>not found</html>", 32, "png", 1, "variant ab12")
