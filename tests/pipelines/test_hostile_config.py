"""Hostile run configs (issue 38, item 1): bounded YAML, no duplicate keys, strict values."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from vismem.core.config import strict_problem
from vismem.core.errors import ConfigError
from vismem.core.yamlsafe import MAX_YAML_BYTES, load_yaml
from vismem.pipelines.config import dotted_overrides, load_config

#: Ten levels of ten aliases each: 10^10 nodes once expanded, ~1 kB of text.
BOMB = "memshot:\n  vlm:\n    name: openai\n    args:\n      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"      l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))


def _write(tmp_path, data: bytes | str):
    p = tmp_path / "c.yaml"
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def test_an_alias_bomb_in_component_args_is_refused_at_once(tmp_path):
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"c\.yaml: it expands to more than 100,000 nodes") as err:
        load_config(_write(tmp_path, BOMB))
    assert time.perf_counter() - t0 < 5  # was > 60 s at 2 GB RSS
    assert "\n" not in str(err.value)


def test_shared_anchors_within_the_bound_still_load():
    text = "a: &x {k: [1, 2]}\nb: *x\nc:\n  <<: *x\n  k: [3]\n"
    assert load_yaml(text, "t") == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": {"k": [3]}}


def test_a_recursive_alias_and_deep_nesting_are_refused():
    with pytest.raises(ConfigError, match="recursive"):
        load_yaml("a: &x [1, *x]\n", "t")
    with pytest.raises(ConfigError, match="nested deeper than 64 levels"):
        load_yaml("[" * 70 + "]" * 70, "t")


def test_a_duplicate_key_names_both_lines(tmp_path):
    with pytest.raises(ConfigError, match=r"c\.yaml line 3, column 1: duplicate key 'seed' \(first at line 1\)"):
        load_config(_write(tmp_path, "seed: 1\nname: x\nseed: 2\n"))
    with pytest.raises(ConfigError, match=r"duplicate key 'k' \(first at line 2\)"):
        load_config(_write(tmp_path, "memshot:\n  k: [5]\n  k: [10]\n"))


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"c\.yaml: not valid UTF-8 text \(byte 6: invalid start byte\)"):
        load_config(_write(tmp_path, b"name: \xff\xfe\n"))


def test_a_config_past_the_size_bound_is_refused_before_reading(tmp_path):
    p = _write(tmp_path, "# " + "x" * MAX_YAML_BYTES + "\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: 1,048,579 bytes of YAML, more than the 1,048,576 allowed"):
        load_config(p)


@pytest.mark.parametrize("text, message", [
    ("seed: true", "seed: must be a number, not a boolean (True)"),
    ("seed: 123456789012345678901234567890123456789012345", "seed: integer 12345678901234567890... has 45 digits"),
    ("seed: '3'", "seed: must be a number, not a string ('3')"),
    ("memshot: {k: [5, 5, 5]}", "memshot.k: 5 is given more than once"),
    ("memshot: {k: [5, false]}", "memshot.k: entry 1: must be a number, not a boolean (False)"),
    ("memshot: {variants: [memshot, memshot]}", "memshot.variants: 'memshot' is given more than once"),
    ("encode: {chains: true}", "encode.chains: must be a number, not a boolean (True)"),
])
def test_values_are_checked_strictly(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    assert message in str(err.value)


def test_strict_rule_keeps_what_is_meant():
    assert strict_problem(bool, True) is None and strict_problem(int | None, None) is None
    assert strict_problem(float, 3) is None and strict_problem(str, "5") is None
    assert strict_problem(int | tuple[int, ...] | None, [1, 2]) is None
    assert strict_problem(int | tuple[int, ...] | None, True) == "must be a number, not a boolean (True)"
    # stages repeat harmlessly: merged into the canonical order
    assert load_config(overrides={"stages": ["memshot", "memshot"]}).stages == ("memshot",)


def test_overrides_use_the_same_loader():
    with pytest.raises(ConfigError, match=r"--set memshot\.vlm, column 8: duplicate key 'a'"):
        dotted_overrides(["memshot.vlm={a: 1, a: 2}"])


def test_the_cli_says_one_line_and_exits_2(tmp_path):
    p = _write(tmp_path, BOMB)
    r = subprocess.run([sys.executable, "-m", "vismem", "run", "--config", str(p), "--print-config"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "more than 100,000 nodes" in lines[0], r.stderr


def test_a_json_spec_flag_with_a_key_twice_is_a_config_error():
    import argparse

    from vismem.pipelines.memshot.stage import cli_overrides

    args = argparse.Namespace(vlm='{"name": "openai", "name": "scripted"}')
    with pytest.raises(ConfigError, match=r"--vlm: an object gives key 'name' twice") as err:
        cli_overrides(args)
    assert err.value.exit_code == 2
    with pytest.raises(ConfigError, match="--judge must be a JSON object"):
        cli_overrides(argparse.Namespace(judge="[" * 100_000 + "]" * 100_000))


def test_an_exponent_is_a_number_as_in_yaml_1_2(tmp_path):
    """PyYAML reads 1e-3 as a string; the strict check would refuse it where a number goes."""
    assert load_yaml("a: 1e-3\nb: -2E+2\nc: 1e\n", "t") == {"a": 0.001, "b": -200.0, "c": "1e"}
    cfg = load_config(_write(tmp_path, "memshot: {embed_gpus: 5e-1}\n"))
    assert cfg.memshot.embed_gpus == 0.5
