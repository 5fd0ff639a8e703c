"""`vismem submit` without a cluster: what the job gets (the cluster's own role unless credentials
are asked for, the Serve address, the cluster's own Ray auth mode) and what is refused before any
work (a folder store for a remote cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vismem.core.errors import VismemError
from vismem.pipelines.commands import jobs

REPO = Path(__file__).resolve().parents[2]
KEYS = {"AWS_ACCESS_KEY_ID": "ASIALAPTOP", "AWS_SECRET_ACCESS_KEY": "laptop-secret-123",
        "AWS_SESSION_TOKEN": "laptop-token-123"}


@pytest.fixture
def laptop(monkeypatch):
    for k, v in {**KEYS, "AWS_REGION": "eu-west-1", "VISMEM_SERVE_URL": "http://head:8000"}.items():
        monkeypatch.setenv(k, v)


def test_aws_keys_stay_home_unless_asked(laptop):
    env = jobs.forwarded_env()
    assert not set(KEYS) & set(env)
    assert env["AWS_REGION"] == "eu-west-1" and env["VISMEM_SERVE_URL"] == "http://head:8000"
    assert {k: jobs.forwarded_env(credentials=True)[k] for k in KEYS} == KEYS


def _run(argv, monkeypatch, *, ask_cluster: bool = False):
    """``vismem submit ARGV`` with the job server replaced: returns what :func:`jobs.submit` got."""
    from vismem.pipelines.cli import build_parser

    got: dict = {}

    def fake_submit(cfg, dashboard, **kw):
        got.update(kw, dashboard=dashboard, cfg=cfg)
        return "vismem-x"

    monkeypatch.setattr(jobs, "submit", fake_submit)
    monkeypatch.setattr(jobs, "_client", lambda *_: pytest.fail("the job server was contacted"))
    if not ask_cluster:  # a loopback dashboard's nodes: this machine
        monkeypatch.setattr(jobs, "cluster_node_ips", lambda _d: ["127.0.0.1"])
    args = build_parser().parse_args(["submit", "report", *argv])
    assert args.func(args) == 0
    return got


def test_the_flag_forwards_the_keys(laptop, monkeypatch, tmp_path):
    store = ["--store", f"file://{tmp_path}/s", "--dashboard", "http://127.0.0.1:8265"]
    assert not set(KEYS) & set(_run(store, monkeypatch)["env"])
    assert _run([*store, "--forward-credentials"], monkeypatch)["env"]["AWS_SESSION_TOKEN"] == "laptop-token-123"


@pytest.mark.parametrize("dashboard", ["http://10.0.0.5:8265", "https://ray.example.org"])
def test_a_folder_store_is_refused_for_a_remote_cluster(dashboard, monkeypatch, tmp_path):
    with pytest.raises(VismemError, match="cannot reach: pass --store s3://") as err:
        _run(["--store", f"file://{tmp_path}/s", "--dashboard", dashboard], monkeypatch)
    assert "\n" not in str(err.value) and not (tmp_path / "s").exists()


def test_ray_auth_mode_is_the_clients_own(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    assert jobs.client_auth_mode({}) == "disabled"
    assert jobs.client_auth_mode({"RAY_AUTH_MODE": "token"}) == "token"
    assert jobs.client_auth_mode({"RAY_AUTH_TOKEN": "t" * 32}) == "token"
    (tmp_path / "tok").write_text("t" * 32)
    assert jobs.client_auth_mode({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "tok")}) == "token"
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("t" * 32)
    assert jobs.client_auth_mode({}) == "token"
    assert jobs.client_auth_mode({"RAY_AUTH_MODE": "disabled"}) == "disabled"  # set explicitly: kept


def test_the_job_runs_under_the_clusters_auth_mode(monkeypatch):
    from vismem.pipelines.config import load_config

    sent: dict = {}

    class Client:
        def submit_job(self, **kw):
            sent.update(kw)
            return kw["submission_id"]

    monkeypatch.setattr(jobs, "_client", lambda *_: Client())
    cfg = load_config(None, overrides={"stages": ["catalog"]})
    jobs.submit(cfg, "http://127.0.0.1:1", working_dir=REPO, env={"VISMEM_SERVE_URL": "http://head:8000"})
    env_vars = sent["runtime_env"]["env_vars"]
    assert "RAY_AUTH_MODE" not in env_vars and env_vars["VISMEM_SERVE_URL"] == "http://head:8000"


@pytest.mark.parametrize("node_ips, here", [(["127.0.0.1"], True), (["127.0.0.1", "10.20.30.40"], False),
                                            (["10.20.30.40"], False)])
def test_a_tunnelled_dashboard_is_judged_by_where_the_clusters_nodes_are(node_ips, here, monkeypatch, tmp_path):
    """`--dashboard http://127.0.0.1:PORT` forwarded from a remote head: the URL is loopback, but
    the cluster (asked through Ray's state API) runs elsewhere, so a folder store is refused."""
    from tests.pipelines.serve_dashboard import FakeServeDashboard

    with FakeServeDashboard(node_ips=node_ips) as dash:
        assert jobs.cluster_is_here(dash.url) is here
        argv = ["--store", f"file://{tmp_path}/s", "--dashboard", dash.url]
        if here:
            assert _run(argv, monkeypatch, ask_cluster=True)["dashboard"] == dash.url
        else:
            with pytest.raises(VismemError, match="cannot reach: pass --store s3://") as err:
                _run(argv, monkeypatch, ask_cluster=True)
            assert "\n" not in str(err.value)
        assert any(path.startswith("/api/v0/nodes") for _, path in dash.calls)


def test_a_dashboard_on_another_host_is_remote_without_asking(monkeypatch):
    monkeypatch.setattr(jobs, "cluster_node_ips", lambda d: pytest.fail(f"asked {d}"))
    assert not jobs.cluster_is_here("https://ray.example.org")
    assert not jobs.cluster_is_here("http://10.255.254.253:8265")


def test_a_dashboard_that_does_not_answer_is_one_error(monkeypatch):
    from vismem.core.ports import free_ports

    url = f"http://127.0.0.1:{free_ports(1)[0]}"
    with pytest.raises(VismemError, match=f"cannot reach the Ray job server at {url!r} to ask where its nodes run"):
        jobs.cluster_is_here(url)
