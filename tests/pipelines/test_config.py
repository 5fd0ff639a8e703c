"""Run config: presets, YAML, errors that name the field and the allowed values (exit 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vismem.pipelines.config import PRESETS, RunConfig, load_config, parse_config
from vismem.core.config import Frozen
from vismem.core.errors import ConfigError


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_load_and_round_trip(preset, tmp_path):
    cfg = load_config(preset=preset)
    assert isinstance(cfg, RunConfig)
    p = tmp_path / "c.yaml"
    p.write_text(cfg.to_yaml())
    again = load_config(p, preset=preset)
    assert again == cfg and again.run_id == cfg.run_id


def test_run_id_follows_content_not_placement():
    a = load_config()
    b = load_config(overrides={"store": {"uri": "file:///tmp/elsewhere"}, "ray": {"concurrency": 7}})
    c = load_config(overrides={"seed": 1})
    assert a.run_id == b.run_id
    assert a.run_id != c.run_id
    assert a.run_id.startswith("local-") and len(a.run_id) == len("local-") + 10


def test_config_is_frozen():
    cfg = load_config()
    with pytest.raises(Exception):
        cfg.seed = 3  # type: ignore[misc]


def test_unknown_field_names_field_and_allowed():
    with pytest.raises(ConfigError) as e:
        parse_config({"ray": {"adress": "auto"}})
    msg = str(e.value)
    assert "ray.adress" in msg and "address" in msg and "allowed fields" in msg
    assert e.value.exit_code == 2


def test_bad_value_names_field_and_allowed_values():
    with pytest.raises(ConfigError) as e:
        parse_config({"ray": {"mode": "galaxy"}})
    assert "ray.mode" in str(e.value) and "'local'" in str(e.value) and "'cluster'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        parse_config({"stages": ["memshot", "teleport"]})
    assert "teleport" in str(e.value) and "memshot, catalog, encode, replay, probes, report" in str(e.value)


def test_stage_order_is_canonical():
    cfg = parse_config({"stages": ["report", "memshot", "report"]})
    assert cfg.stages == ("memshot", "report")


def _all_models(model, seen=None):
    seen = seen or set()
    if model in seen:
        return seen
    seen.add(model)
    for f in model.model_fields.values():
        if isinstance(f.annotation, type) and issubclass(f.annotation, Frozen):
            _all_models(f.annotation, seen)
    return seen


def test_every_field_is_described():
    for model in _all_models(RunConfig):
        assert model.model_config.get("extra") == "forbid", model
        assert model.model_config.get("frozen") is True, model
        for name, f in model.model_fields.items():
            assert f.description, f"{model.__name__}.{name} has no description"


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_cli_invalid_config_exit_2_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nray:\n  mode: galaxy\n")
    r = _cli("run", "--config", str(bad), "--set", f"runs_dir={tmp_path}/runs", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("error") == 1 and "ray.mode" in r.stderr
    assert not (tmp_path / "runs").exists()

    r = _cli("run", "--set", "colour=red", "--set", f"runs_dir={tmp_path}/runs", cwd=tmp_path)
    assert r.returncode == 2 and "colour" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_cli_print_config(tmp_path):
    r = _cli("run", "--preset", "paper", "--print-config", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# run id: paper-")


def test_cli_print_config_shows_secrets_as_stars(tmp_path):
    canary = "CANARY-print-config-7f3a9c"
    r = _cli("run", "--set", f"catalog.image_source_args={{api_key: {canary}}}", "--print-config", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert canary not in r.stdout and "api_key: '***'" in r.stdout


def test_an_override_naming_another_component_replaces_the_presets_spec():
    # local preset: memshot.image_embedder = {name: ocr-minilm, args: {ocr: ...}}
    cfg = load_config(overrides={"memshot": {"image_embedder": {"model": "qwen3-vl-embedding-8b"}}})
    assert cfg.memshot.image_embedder.raw() == {"model": "qwen3-vl-embedding-8b", "args": {}}
    cfg = load_config(overrides={"memshot": {"image_embedder": {"name": "minilm"}}})
    assert cfg.memshot.image_embedder.raw() == {"name": "minilm", "args": {}}  # no OCR args carried over
    # the same component: its args are merged, the preset's others kept
    base = load_config().memshot.image_embedder
    cfg = load_config(overrides={"memshot": {"image_embedder": {"args": {"extra": 1}}}})
    assert cfg.memshot.image_embedder.args == {**base.args, "extra": 1}
    cfg = load_config(overrides={"memshot": {"image_embedder": {"name": base.name, "args": {"extra": 1}}}})
    assert cfg.memshot.image_embedder.args == {**base.args, "extra": 1}
    # a section that is not a spec (it has other keys) still merges field by field
    assert load_config(overrides={"name": "other"}).memshot == load_config().memshot
