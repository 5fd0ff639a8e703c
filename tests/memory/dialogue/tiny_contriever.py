"""A tiny Contriever-shaped model (BERT, random weights from numpy's seeded generator, so the
same on every torch) and its WordPiece vocabulary, written to a folder: what upstream's
``flat-contriever`` and ours both run in ``test_lme_upstream.py`` and
``scripts/lme_upstream_fixture.py`` (weights are never fetched)."""

from __future__ import annotations

import re
import string
from pathlib import Path

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_tiny_contriever(folder: str | Path, texts: list[str], *, seed: int = 0) -> Path:
    """Write the model and tokenizer to ``folder``: vocabulary = specials, single characters
    (also as ``##`` pieces) and the words of ``texts``; weights N(0, 0.2) in parameter-name order."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    words = sorted({w for t in texts for w in re.findall(r"[a-z0-9]+", t.lower())} - set(chars))
    vocab = SPECIAL + chars + [f"##{c}" for c in chars] + words
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, model_max_length=256)
    tok.save_pretrained(folder)
    assert len(tok) == len(vocab)  # the vocabulary was taken (an older transformers wants vocab_file)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=256)
    model = BertModel(cfg)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _name, p in sorted(model.named_parameters()):
            p.copy_(torch.from_numpy(rng.normal(0.0, 0.2, tuple(p.shape)).astype(np.float32)))
    model.save_pretrained(folder)
    return folder
