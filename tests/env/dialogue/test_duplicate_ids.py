"""Duplicate ids in a dataset are an error naming both records, never a silent replacement
(issue 38 item 4); LongMemEval's identical repeated sessions (upstream #54) stay accepted."""

from __future__ import annotations

import copy
import json

import pytest

from vismem.core.errors import DataError
from vismem.env.dialogue import load_locomo, load_longmemeval
from vismem.env.dialogue.lme_synth import synthetic_records
from vismem.env.dialogue.longmemeval import DuplicateSessionError


@pytest.fixture(scope="module")
def locomo(data_dir):
    return json.loads((data_dir / "locomo/locomo10.json").read_text())[:2]


def _write(tmp_path, obj, name="d.json"):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def test_two_locomo_conversations_with_one_sample_id_name_both_records(tmp_path, locomo):
    twin = copy.deepcopy(locomo)
    twin[1]["sample_id"] = twin[0]["sample_id"]  # other sessions under the same id
    p = _write(tmp_path, twin)
    with pytest.raises(DataError) as err:
        load_locomo(p)
    msg = str(err.value)
    assert f"{p}: record #1: duplicate sample_id {twin[0]['sample_id']!r}, also in record #0" in msg
    assert "\n" not in msg and err.value.exit_code == 4


def test_a_dia_id_twice_in_one_conversation_names_both_turns(tmp_path, locomo):
    bad = copy.deepcopy(locomo[:1])
    conv = bad[0]["conversation"]
    conv["session_2"][0]["dia_id"] = conv["session_1"][3]["dia_id"]
    with pytest.raises(DataError, match=r"duplicate dia_id 'D1:4', also in conversation\.session_1\[3\]") as err:
        load_locomo(_write(tmp_path, bad))
    assert "conversation.session_2[0]" in str(err.value)


def test_a_json_key_given_twice_is_refused(tmp_path, locomo):
    text = json.dumps(locomo[:1])
    # a second "session_1" key inside the conversation object: json keeps the last silently
    text = text.replace('"session_1": [', '"session_1": [], "session_1": [', 1)
    p = tmp_path / "d.json"
    p.write_text(text)
    with pytest.raises(DataError, match=r"gives key 'session_1' twice"):
        load_locomo(p)


def test_longmemeval_question_ids_are_unique_across_records(tmp_path):
    recs = list(synthetic_records(n_questions=3))
    recs[2]["question_id"] = recs[0]["question_id"]
    with pytest.raises(DataError) as err:
        load_longmemeval(_write(tmp_path, recs))
    assert f"record #2: duplicate question_id {recs[0]['question_id']!r}, also in record #0" in str(err.value)


def test_longmemeval_identical_repeats_kept_conflicting_ones_name_both_positions(tmp_path):
    recs = list(synthetic_records(n_questions=4, dup_every=4))
    convs = load_longmemeval(_write(tmp_path, recs))
    assert convs.duplicate_sessions == 1  # record 0 repeats a session with identical turns: kept once
    rec = copy.deepcopy(recs[1])
    rec["haystack_session_ids"][1] = rec["haystack_session_ids"][0]  # same id, other turns
    with pytest.raises(DuplicateSessionError, match=r"repeats session .* \(positions 0 and 1\) with different turns"):
        load_longmemeval(_write(tmp_path, [rec], "conflict.json"))


@pytest.mark.parametrize("section, field, label", [
    ("products", "id", "product id"), ("collections", "id", "collection id"),
    ("categories", "id", "category id"), ("variants", "id", "variant id"),
])
def test_catalogue_ids_are_unique(data_dir, section, field, label):
    from vismem.env.storefront.catalog import load_catalog

    d = data_dir / "dmv-bench"
    seed = json.loads((d / "seed_v2.json").read_text())
    seed[section][1][field] = seed[section][0][field]
    with pytest.raises(DataError, match=rf"{section}\[1\]: duplicate {label} .*, also in {section}\[0\]"):
        load_catalog(data_dir, seed_doc=seed)


def test_cue_registry_rows_name_both(data_dir):
    from vismem.env.storefront.catalog import load_catalog

    d = data_dir / "dmv-bench"
    cues = json.loads((d / "cue_registry.json").read_text())
    cues["rows"][5]["url_hash"] = cues["rows"][2]["url_hash"]
    with pytest.raises(DataError, match=r"rows\[5\]: duplicate url_hash .*, also in rows\[2\]"):
        load_catalog(data_dir, cue_doc=cues)
