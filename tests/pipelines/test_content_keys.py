"""Nothing stale: run ids and caches follow the content of the data a run reads, never its path;
and secrets, wherever they are given, never reach the store, the manifest, the logs or the run id."""

from __future__ import annotations

import json
import shutil

import pytest

from vismem.core.digest import clear_memo
from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run

CANARY = "AKIA-CANARY-123"


@pytest.fixture
def data_copy(tmp_path, data_dir):
    """A private copy of the shared data (LoCoMo + DMV-Bench) that a test may edit."""
    d = tmp_path / "data"
    shutil.copytree(data_dir / "dmv-bench", d / "dmv-bench")
    (d / "locomo").mkdir(parents=True)
    shutil.copy(data_dir / "locomo" / "locomo10.json", d / "locomo" / "locomo10.json")
    return d


def _edit_catalogue(data_dir):
    """Change one category's description (what the shop's pages show)."""
    path = data_dir / "dmv-bench" / "seed_v2.json"
    doc = json.loads(path.read_text())
    doc["categories"][0]["description"] = "Browse our edited chairs."
    path.write_text(json.dumps(doc))
    clear_memo()


def _edit_locomo(path):
    doc = json.loads(path.read_text())
    doc[0]["qa"][0]["question"] = "Which question did someone change?"
    path.write_text(json.dumps(doc))
    clear_memo()


def test_run_id_follows_the_data_content_not_its_path(tmp_path, data_copy, data_dir):
    ref = load_config(overrides={"data_dir": str(data_dir)})
    same = load_config(overrides={"data_dir": str(data_copy)})
    assert same.run_id == ref.run_id  # the same bytes elsewhere: the same run
    moved = data_copy.parent / "elsewhere.json"
    shutil.copy(data_copy / "locomo" / "locomo10.json", moved)
    assert load_config(overrides={"data_dir": str(data_copy), "memshot": {"dataset_path": str(moved)}}).run_id == ref.run_id
    _edit_locomo(data_copy / "locomo" / "locomo10.json")
    edited = load_config(overrides={"data_dir": str(data_copy)})
    assert edited.run_id != ref.run_id
    assert edited.input_digests()["memshot.dataset"] != ref.input_digests()["memshot.dataset"]
    assert edited.input_digests()["dmv-bench/seed_v2.json"] == ref.input_digests()["dmv-bench/seed_v2.json"]
    edited_id = edited.run_id
    _edit_catalogue(data_copy)
    assert edited.run_id == edited_id  # a loaded config keeps its id while it runs
    assert load_config(overrides={"data_dir": str(data_copy)}).run_id != edited_id


def test_trajectory_slugs_follow_the_catalogue_content(data_copy, data_dir):
    from vismem.pipelines.dmv.protocol import plan

    ref = plan(load_config(overrides={"data_dir": str(data_dir)}))[1]
    assert plan(load_config(overrides={"data_dir": str(data_copy)}))[1] == ref
    _edit_catalogue(data_copy)
    assert plan(load_config(overrides={"data_dir": str(data_copy)}))[1] != ref  # pages changed: new trajectories


def test_an_edited_locomo_file_is_not_served_from_stale_caches(tmp_path, data_copy, ray_local, locomo_cut):
    # the run's LoCoMo file is the two-session cut (tests/conftest.py): the same path through
    # memshot on a tenth of the turns to embed; the edit below is to its first question
    shutil.copy(locomo_cut, data_copy / "locomo" / "locomo10.json")
    clear_memo()
    over = {"stages": ["memshot"], "data_dir": str(data_copy), "runs_dir": str(tmp_path / "runs"),
            "store": {"uri": f"file://{tmp_path}/store"},
            "memshot": {"conversations": 1, "variants": ["text-rag"], "memories": [], "k": [5], "embed_on_ray": False}}
    first_cfg = load_config(overrides=over)
    first = run(first_cfg, progress=False)["memshot"]
    _edit_locomo(data_copy / "locomo" / "locomo10.json")
    cfg = load_config(overrides=over)
    assert cfg.run_id != first_cfg.run_id
    second = run(cfg, progress=False)["memshot"]
    assert second["status"] == "done" and second["questions"] == first["questions"]
    store = Store.open(f"file://{tmp_path}/store")
    man = store.get_json(f"runs/{cfg.run_id}/manifest.json")
    assert man["inputs"]["memshot.dataset"]["digest"] == cfg.input_digests()["memshot.dataset"]
    questions = store.read_table(f"runs/{cfg.run_id}/results/memshot_recall.parquet")
    # the run's own embedding cache was built from the edited file: nothing reused from the first
    assert store.exists(f"runs/{cfg.run_id}/memshot/embeddings/text_embedder.parquet")
    assert questions.height == store.read_table(f"runs/{first_cfg.run_id}/results/memshot_recall.parquet").height


def _official_root(tmp_path, cfg, n):
    """A stand-in for the published image set: placeholder PNGs for the first ``n`` products."""
    from vismem.env.storefront.imagesource import solid_png as _png
    from vismem.pipelines.context import catalog_from_config

    root = tmp_path / "official"
    for v in catalog_from_config(cfg).variants[:n]:
        for rel in (v.image_path, v.base_image_path):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(_png(64, 64, (120, 130, 140)))
    return root


SECRET_FIELDS = [
    {"store": {"endpoint_url": f"http://{CANARY}:pw-{CANARY}@127.0.0.1:9"}},
    {"catalog": {"image_source": {"name": "official", "args": {"root": "/x", "secret_key": CANARY}}}},
    {"catalog": {"image_source_args": {"access_key": CANARY, "aws_secret_access_key": CANARY}}},
    {"encode": {"backends": [{"name": "openai", "args": {"model": "m", "api_key": CANARY}}]}},
    {"memshot": {"vlm": {"name": "openai", "args": {"model": "m", "extra_body": {"auth_token": CANARY}}}}},
    {"memory": {"components": {"captioner": {"name": "vlm", "args": {"token": CANARY}}}}},
    {"probes": {"backends": [{"name": "openai", "args": {"model": "m", "base_url": f"http://u:{CANARY}@h/v1"}}]}},
]


@pytest.mark.parametrize("over", SECRET_FIELDS, ids=[next(iter(o)) + str(i) for i, o in enumerate(SECRET_FIELDS)])
def test_a_secret_in_any_field_never_changes_the_run_id_or_reaches_a_manifest(tmp_path, over):
    from vismem.core.secrets import Scrubber, secret_values
    from vismem.pipelines.manifest import Manifest

    cfg = load_config(overrides={**over, "store": {"uri": f"file://{tmp_path}/store", **over.get("store", {})}})
    other = json.loads(json.dumps(over).replace(CANARY, "ROTATED-SECRET-999"))
    rotated = load_config(overrides={**other, "store": {"uri": f"file://{tmp_path}/store", **other.get("store", {})}})
    assert cfg.run_id == rotated.run_id  # a rotated credential is the same run
    assert CANARY in json.dumps(cfg.model_dump(mode="json"))  # still there for the build
    store = Store.open(f"file://{tmp_path}/store")
    m = Manifest(store, cfg.run_id, scrubber=Scrubber(secret_values(cfg.model_dump(mode="json"))))
    m.begin(cfg, seeds={"root": 0})
    m.stage("catalog", "failed", error=f"InvalidAccessKeyId: {CANARY}")
    assert CANARY not in store.get_bytes(m.key).decode() and "***" in store.get_bytes(m.key).decode()


def test_canary_secrets_appear_nowhere_a_run_writes(tmp_path, ray_local):
    """A real run (catalog from an "official" source with credentials, then report) with a canary in
    the image source's args and in the store endpoint: grep the store, the manifest and the logs."""
    base = {"name": "canary", "stages": ["catalog", "report"], "runs_dir": str(tmp_path / "runs"),
            "store": {"uri": f"file://{tmp_path}/store"}, "catalog": {"limit": 3}}
    root = _official_root(tmp_path, load_config(overrides=base), 3)
    secret = {"store": {"uri": f"file://{tmp_path}/store", "endpoint_url": f"http://{CANARY}:x-{CANARY}@127.0.0.1:9"},
              "catalog": {"limit": 3, "image_source": {"name": "official", "args": {
                  "root": str(root), "access_key": CANARY, "secret_key": f"s-{CANARY}"}}}}
    cfg = load_config(overrides={**base, **secret})
    no_secret = load_config(overrides={**base, "catalog": {"limit": 3, "image_source": {"name": "official",
                                                                                       "args": {"root": str(root)}}}})
    assert cfg.run_id == no_secret.run_id
    out = run(cfg, progress=False)
    assert out["catalog"]["status"] == "done" and out["catalog"]["generated"] == 3
    hits = [str(p) for d in (tmp_path / "store", tmp_path / "runs") for p in d.rglob("*")
            if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert hits == []
    man = (tmp_path / "store" / "runs" / cfg.run_id / "manifest.json").read_text()
    assert '"secret_key": "***"' in man and '"endpoint_url": "http://***@127.0.0.1:9"' in man
    assert (tmp_path / "runs" / cfg.run_id / "run.log").read_text().strip()  # the log exists and was grepped
