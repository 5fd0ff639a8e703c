"""Feature jobs on a GPU cluster: only models that run in-process reserve GPUs, and an endpoint
captioner is asked many captions at once."""

from __future__ import annotations

import threading
import time

from vismem.memory.agent.features import caption_feature, embedder_feature
from vismem.pipelines.dmv.features_job import feature_batch, in_flight, pool_kwargs, wants_accelerator
from vismem.pipelines.settings import RayConfig

OPENAI = {"name": "openai", "args": {"model": "m", "base_url": "http://127.0.0.1:1/v1", "max_concurrency": 6}}


def test_only_in_process_models_reserve_gpus():
    local_vlm = {"name": "transformers", "args": {"path": "/models/qwen2.5-vl-7b"}}
    cases = {
        "siglip2": (embedder_feature("image_embedding", {"name": "siglip2", "args": {"path": "/m/siglip2"}}), True),
        "minilm": (embedder_feature("text_embedding", "minilm"), False),
        "http captioner": (caption_feature({"name": "vlm", "args": {"vlm": OPENAI}}, "caption"), False),
        "local captioner": (caption_feature({"name": "vlm", "args": {"vlm": local_vlm}}, "caption"), True),
        "catalogue": (caption_feature("catalogue", "caption"), False),
    }
    for name, (fs, want) in cases.items():
        assert wants_accelerator(fs) is want, name
        kw = pool_kwargs(fs, RayConfig(), actors=2, num_gpus=1.0)
        assert ("num_gpus" in kw) is want, name
        assert kw["compute"].max_size == 2


class _SlowVLM:
    max_concurrency = 4


class _Captioner:
    """A captioner over an endpoint: each call waits, and the peak of calls at once is kept."""

    def __init__(self):
        self.vlm, self.now, self.peak, self.lock = _SlowVLM(), 0, 0, threading.Lock()

    def caption(self, image, *, url_hash=None):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        if url_hash == "bad":
            raise RuntimeError("endpoint said no")
        return f"caption of {url_hash}"


def test_endpoint_captions_run_in_flight_in_item_order():
    model = _Captioner()
    assert in_flight(model) == 4
    items = [{"content_id": f"c{i}", "image_key": None, "url_hash": "bad" if i == 5 else f"h{i}", "text": None}
             for i in range(12)]
    rows = feature_batch("caption", model, items, read_blob=lambda k: b"")
    assert [r["content_id"] for r in rows] == [f"c{i}" for i in range(12)]
    assert rows[0]["caption"] == "caption of h0" and rows[5]["caption"] is None
    assert "endpoint said no" in rows[5]["error"]
    assert model.peak == 4  # never more than the client allows, and more than one at once
