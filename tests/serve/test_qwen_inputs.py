"""Loading details that real checkpoints differ in: preprocessor configs and LM-head weights."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from vismem.serve.build import build_embedder
from vismem.serve.qwen_inputs import QwenVLInputs

# The two preprocessor_config.json layouts shipped with Qwen2.5-VL-7B-Instruct and Qwen3-VL.
QWEN25_PREPROC = {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
                  "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
                  "image_std": [0.26862954, 0.26130258, 0.27577711],
                  "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"}
QWEN3_PREPROC = {"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
                 "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
                 "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor",
                 "image_processor_type": "Qwen2VLImageProcessorFast"}


@pytest.mark.parametrize("fixture,preproc,defaults", [
    ("tiny_qwen25vl", QWEN25_PREPROC, (3136, 12845056)),
    ("tiny_qwen3vl", QWEN3_PREPROC, (65536, 16777216)),
])
def test_pixel_bounds_override_both_config_layouts(request, tmp_path, fixture, preproc, defaults):
    path = tmp_path / "ckpt"
    shutil.copytree(request.getfixturevalue(fixture), path)
    (path / "preprocessor_config.json").write_text(json.dumps(preproc))
    size = QwenVLInputs(path).image_processor.size
    assert (size.shortest_edge, size.longest_edge) == defaults
    size = QwenVLInputs(path, min_pixels=4096, max_pixels=1843200).image_processor.size
    assert (size.shortest_edge, size.longest_edge) == (4096, 1843200)
    assert QwenVLInputs(path, max_pixels=1843200).image_processor.size.shortest_edge == defaults[0]


def test_embedder_loads_a_checkpoint_that_carries_an_lm_head(tmp_path):
    from vismem.serve.testing import build_tiny_qwen3vl

    with_head = build_tiny_qwen3vl(tmp_path / "gen", embedding=False)
    bare = build_tiny_qwen3vl(tmp_path / "emb", embedding=True)
    a = build_embedder({"name": "qwen3-vl-embedding", "args": {"path": str(with_head)}}).embed_texts(["x y"])
    b = build_embedder({"name": "qwen3-vl-embedding", "args": {"path": str(bare)}}).embed_texts(["x y"])
    np.testing.assert_allclose(a, b, atol=1e-6)  # same seed → same backbone; the head is ignored
