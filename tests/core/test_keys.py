"""Store key parts are injective, safe ids are their own key, and every key part is one clean component."""

from __future__ import annotations

import re

from vismem.core.keys import id_from_key, key_part

IDS = ["conv 26", "conv_26", "conv-26", "conv.26", "conv/26", "conv\\26", "conv:26", "conv~26", "conv~20~26",
       "conv~5f~26", "", ".", "..", "~", "~~", "~2e~", "é", "e\u0301", "x\U0001f600", "CONV 26", "a b/c d", "\x00"]


def test_safe_ids_are_their_own_key():
    for text in ("conv-26", "session_1", "e47becba_abs", "answer_4be1b6b4_2", "A.b-C_9"):
        assert key_part(text) == text


def test_distinct_ids_never_share_a_key_and_read_back():
    keys = [key_part(t) for t in IDS]
    assert len(set(keys)) == len(IDS), {k: [t for t in IDS if key_part(t) == k] for k in keys if keys.count(k) > 1}
    for text, key in zip(IDS, keys):
        assert re.fullmatch(r"[A-Za-z0-9._~-]+", key) and key not in (".", ".."), (text, key)
        assert id_from_key(key) == text
