"""`vismem serve up/down --dashboard` against a concurrent writer on the same Serve instance (a
colleague's `serve deploy`, a RayService reconcile, another `vismem serve up`): the REST API has no
compare-and-set, so vismem reads twice before its PUT, reads back after it and merges again when
the apps changed meanwhile. The fake dashboard's ``after`` hooks play the other writer."""

from __future__ import annotations

import copy

import pytest

from tests.pipelines.serve_dashboard import FakeServeDashboard
from tests.pipelines.test_serve_sharing import COLLEAGUE
from vismem.pipelines.cli import main
from vismem.serve import sharing
from vismem.serve.sharing import is_ours

#: An application another writer deploys while vismem writes.
LATE = {"name": "late", "route_prefix": "/late", "import_path": "late.pkg:app",
        "deployments": [{"name": "Late", "num_replicas": 1}]}


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(sharing, "BACKOFF_S", 0.001)


@pytest.fixture
def state(tmp_path, monkeypatch):
    path = tmp_path / "serve" / "state.json"
    monkeypatch.setenv("VISMEM_SERVE_STATE", str(path))
    monkeypatch.delenv("VISMEM_SERVE_URL", raising=False)
    return path


def _dash(**kw) -> FakeServeDashboard:
    d = FakeServeDashboard(**kw)
    d.add_app(COLLEAGUE)
    return d


def _once(when, then):
    """A hook that runs ``then(fake)`` the first time ``when(fake)`` holds."""
    fired = []

    def hook(fake):
        if not fired and when(fake):
            fired.append(True)
            then(fake)
    return hook


def _up(d, *models) -> int:
    return main(["serve", "up", *(models or ("scripted-shopper",)), "--dashboard", d.url, "--timeout", "5"])


def test_a_normal_write_is_one_put_read_before_twice_and_checked_after():
    from ray.dashboard.modules.serve.sdk import ServeSubmissionClient

    ours = {"applications": [{"name": "mine", "route_prefix": "/mine", "import_path": "vismem.serve.apps:model_app"}]}
    with _dash() as d:
        done = sharing.write_shared(ServeSubmissionClient(d.url), ours)
        assert done.writes == 1 and done.dropped == [] and len(d.puts) == 1
        assert d.serve_gets == 3  # read, read again right before the PUT, read back
        assert set(done.details["applications"]) == {"colleague", "mine"}
        assert d.apps["colleague"]["deployed_app_config"] == COLLEAGUE


@pytest.mark.parametrize("race", ["a new app", "a changed app"])
def test_a_write_between_vismems_reads_is_merged_in(state, race, capsys):
    changed = {**COLLEAGUE, "deployments": [{"name": "Theirs", "num_replicas": 5}]}
    theirs = [changed] if race == "a changed app" else [COLLEAGUE, LATE]
    with _dash() as d:
        d.after["GET"] = _once(lambda f: f.serve_gets == 1, lambda f: f.other_put({"applications": theirs}))
        assert _up(d) == 0
        assert len(d.puts) == 1  # the change was seen before writing: one PUT, with it
        for app in theirs:
            assert d.apps[app["name"]]["deployed_app_config"] == app
        assert d.apps["scripted-shopper"]["status"] == "RUNNING"
    capsys.readouterr()


def test_a_write_after_vismems_that_drops_its_apps_is_merged_and_written_again(state, capsys):
    """A RayService reconcile writes its own config only, right after vismem's PUT."""
    with _dash() as d:
        d.after["PUT"] = _once(lambda f: True, lambda f: f.other_put({"applications": [COLLEAGUE, LATE]}))
        assert _up(d, "scripted-shopper", "minilm") == 0
        assert len(d.puts) == 2 and len(d.other_puts) == 1
        assert set(d.apps) == {"colleague", "late", "scripted-shopper", "minilm"}
        assert d.apps["late"]["deployed_app_config"] == LATE
        assert all(is_ours(d.apps[n]["deployed_app_config"]) for n in ("scripted-shopper", "minilm"))
    capsys.readouterr()


def _bump(fake):
    """Another writer changing the colleague's app again."""
    cfg = copy.deepcopy(fake.apps["colleague"]["deployed_app_config"])
    cfg["deployments"][0]["num_replicas"] += 1
    fake.other_put({"applications": [a for a in fake.deployed() if a["name"] != "colleague"] + [cfg]})


def _drop_ours(fake):
    fake.other_put({"applications": [a for a in fake.deployed() if not is_ours(a)]})


@pytest.mark.parametrize("hook, names", [(("GET", _bump), "colleague"), (("PUT", _drop_ours), "scripted-shopper")],
                         ids=["changes-before-each-put", "drops-ours-after-each-put"])
def test_a_writer_that_keeps_racing_is_one_clear_error_after_n_tries(state, capsys, hook, names):
    with _dash() as d:
        d.after[hook[0]] = hook[1]
        assert _up(d) == 1
        err = capsys.readouterr().err
        assert f"Serve apps kept changing while vismem wrote its config ({sharing.TRIES} tries): {names}" in err
        # one line (a Ray logger an earlier test bound to its own captured stream may add noise)
        line = [ln for ln in err.splitlines() if "no compare-and-set" in ln]
        assert len(line) == 1 and "Serve apps kept changing" in line[0]
        assert len(d.puts) == (0 if hook[0] == "GET" else sharing.TRIES)
        assert not state.exists()


def test_an_app_deployed_as_vismem_writes_and_removed_by_it_is_named(state, capsys):
    """A write landing between vismem's last read and its PUT is undone; Ray shows the new app
    DELETING (its config gone) right after, and vismem names it."""
    with _dash(lingering_deletes=True) as d:
        d.after["GET"] = _once(lambda f: f.serve_gets == 2, lambda f: f.other_put({"applications": [COLLEAGUE, LATE]}))
        assert _up(d) == 0
        assert d.apps["late"]["status"] == "DELETING" and len(d.puts) == 1
        err = capsys.readouterr().err
        assert "Serve app 'late' was deployed by another writer while vismem wrote its config" in err


def test_down_keeps_serve_up_for_an_app_deployed_between_its_reads(state, capsys):
    with FakeServeDashboard() as d:
        assert _up(d) == 0
        reads = d.serve_gets
        d.after["GET"] = _once(lambda f: f.serve_gets == reads + 1,
                               lambda f: f.other_put({"applications": [*f.deployed(), LATE]}))
        assert main(["serve", "down"]) == 0
        assert ("DELETE", "/api/serve/applications/") not in d.calls  # no shutdown: someone else runs
        assert set(d.apps) == {"late"} and d.apps["late"]["deployed_app_config"] == LATE
    capsys.readouterr()


def test_a_deleting_foreign_app_frees_its_name_and_route(state, capsys):
    """Ray revives a DELETING app's name with the new config and frees its route: no clash."""
    with FakeServeDashboard(lingering_deletes=True) as d:
        d.add_app({"name": "scripted-shopper", "route_prefix": "/scripted-shopper", "import_path": "a:b"})
        d.other_put({"applications": []})  # its owner removes it; Ray is still deleting it
        assert d.apps["scripted-shopper"]["status"] == "DELETING"
        assert _up(d) == 0
        assert is_ours(d.apps["scripted-shopper"]["deployed_app_config"])
    capsys.readouterr()


class _Racing:
    """A Serve client whose calls let another writer in: ``on_get(n)`` after the n-th read,
    ``on_put(n)`` after the n-th write."""

    def __init__(self, client, on_get=None, on_put=None) -> None:
        self.client, self.on_get, self.on_put, self.gets, self.puts = client, on_get, on_put, 0, 0

    def get_serve_details(self):
        details = self.client.get_serve_details()
        self.gets += 1
        if self.on_get:
            self.on_get(self.gets)
        return details

    def deploy_applications(self, cfg):
        self.client.deploy_applications(cfg)
        self.puts += 1
        if self.on_put:
            self.on_put(self.puts)


@pytest.mark.slow
def test_races_on_a_real_loopback_cluster():
    """Real Ray Serve: a normal write is one PUT whose read-back matches what Ray stored; an app
    another writer deploys between vismem's last read and its PUT shows DELETING and is named; a
    write that drops vismem's apps right after its PUT is merged and written again."""
    import time

    from ray.dashboard.modules.serve.sdk import ServeSubmissionClient

    from vismem.core.ports import free_ports
    from vismem.pipelines.localcluster import LocalRayCluster

    def app(name):
        return {"name": name, "route_prefix": f"/{name}", "import_path": "vismem.serve.apps:model_app",
                "args": {"vlm_spec": {"name": "scripted-recall", "args": {}}, "model_id": name},
                "deployments": [{"name": "OpenAIModelServer", "num_replicas": 1,
                                 "ray_actor_options": {"num_cpus": 0.25}}]}

    with LocalRayCluster(head_cpus=2, workers=0) as cluster:
        other = ServeSubmissionClient(cluster.dashboard_url)
        http = {"host": "127.0.0.1", "port": free_ports(1)[0]}

        def deployed():
            return [a["deployed_app_config"] for a in other.get_serve_details()["applications"].values()
                    if a.get("deployed_app_config")]

        def deploy_and_wait(apps):
            other.deploy_applications({"http_options": http, "applications": apps})
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                got = other.get_serve_details()["applications"]
                if all(got.get(a["name"], {}).get("status") == "RUNNING" for a in apps):
                    return
                time.sleep(0.5)
            raise AssertionError(f"not running: {got}")

        deploy_and_wait([app("colleague")])
        ours = {"applications": [app("mine")]}
        done = sharing.write_shared(ServeSubmissionClient(cluster.dashboard_url), ours)
        assert done.writes == 1 and done.dropped == []
        deploy_and_wait(deployed())

        racing = _Racing(ServeSubmissionClient(cluster.dashboard_url),
                         on_get=lambda n: n == 2 and deploy_and_wait([*deployed(), app("late")]))
        done = sharing.write_shared(racing, ours)
        assert done.writes == 1 and done.dropped == ["late"]
        assert done.details["applications"]["late"]["status"] == "DELETING"

        racing = _Racing(ServeSubmissionClient(cluster.dashboard_url),
                         on_put=lambda n: n == 1 and other.deploy_applications(
                             {"http_options": http, "applications": [app("colleague")]}))
        done = sharing.write_shared(racing, ours)
        assert done.writes == 2 and is_ours(done.details["applications"]["mine"]["deployed_app_config"])
        deploy_and_wait(deployed())
        assert {a["name"] for a in deployed()} == {"colleague", "mine"}
