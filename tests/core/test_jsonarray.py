"""The incremental JSON-array reader: same elements as json.load, across chunk boundaries."""

from __future__ import annotations

import json

import pytest

from vismem.core.errors import DataError
from vismem.core.jsonarray import iter_json_array

DOC = [{"a": 1, "t": "x" * 50, "u": "你好 — \u00e9"}, [1, 2.5, None], "s,]\"", 12345678, True, {"nested": [{"k": []}]}]


@pytest.mark.parametrize("chunk", [16, 17, 33, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_same_as_json_load(tmp_path, chunk, indent):
    p = tmp_path / "a.json"
    p.write_text(json.dumps(DOC, indent=indent, ensure_ascii=indent is None), encoding="utf-8")
    assert list(iter_json_array(p, chunk_chars=chunk)) == DOC


def test_number_cut_by_a_chunk_is_read_whole(tmp_path):
    p = tmp_path / "n.json"
    p.write_text("[" + " " * 14 + "123456789]")  # the chunk ends inside the number
    assert list(iter_json_array(p, chunk_chars=16)) == [123456789]


def test_empty_list_and_whitespace(tmp_path):
    p = tmp_path / "e.json"
    p.write_text("  \n[ \n ]\n")
    assert list(iter_json_array(p, chunk_chars=16)) == []


@pytest.mark.parametrize("text, why", [
    ("", "got an empty file"),
    ('{"a": 1}', "expected a JSON list"),
    ('[{"a": 1} {"b": 2}]', "expected ',' or ']' after array element #0"),
    ('[{"a": 1}, {"b": ]', "not valid JSON in array element #1"),
    ('[{"a": 1}', "expected ',' or ']' after array element #0, got 'end of file'"),
    ("[1] 2", "extra data after the closing"),
])
def test_malformed_names_the_problem(tmp_path, text, why):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(DataError, match=why) as err:
        list(iter_json_array(p, chunk_chars=16))
    assert str(p) in str(err.value)


def test_not_utf8(tmp_path):
    p = tmp_path / "latin1.json"
    p.write_bytes(b'["caf\xe9"]')
    with pytest.raises(DataError, match="not valid UTF-8"):
        list(iter_json_array(p))


def test_reads_lazily(tmp_path):
    p = tmp_path / "lazy.json"
    p.write_text('[{"a": 1}, ' + "x" * 1000)  # malformed far after the first element
    it = iter_json_array(p, chunk_chars=16)
    assert next(it) == {"a": 1}
    with pytest.raises(DataError):
        next(it)


def test_an_element_that_never_ends_stops_at_the_bound(tmp_path):
    """Issue 38: a record past the per-element bound (or one whose closing bracket never
    comes) is one DataError, not a buffer that grows with the file."""
    from vismem.core.errors import DataError
    from vismem.core.jsonarray import iter_json_array

    p = tmp_path / "endless.json"
    p.write_text('[{"a": 1}, {"text": "' + "x" * 200_000)
    it = iter_json_array(p, chunk_chars=1024, max_element_chars=50_000)
    assert next(it) == {"a": 1}
    with pytest.raises(DataError, match=r"array element #1 is longer than 50,000 characters"):
        next(it)


def test_an_element_nested_too_deep_is_a_data_error(tmp_path):
    from vismem.core.errors import DataError
    from vismem.core.jsonarray import iter_json_array

    p = tmp_path / "deep.json"
    p.write_text("[" + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(DataError, match="nested too deep"):
        list(iter_json_array(p))


def test_a_key_given_twice_in_an_element_is_a_data_error(tmp_path):
    from vismem.core.errors import DataError
    from vismem.core.jsonarray import iter_json_array

    p = tmp_path / "dup.json"
    p.write_text('[{"question_id": "a"}, {"question_id": "b", "x": {"role": "user", "role": "assistant"}}]')
    with pytest.raises(DataError, match=r"array element #1: an object gives key 'role' twice"):
        list(iter_json_array(p))
