"""Shared fixtures: real parts on loopback (S3 server, Ray, Chromium), tiny data, seeded.

Slow end-to-end tests carry ``@pytest.mark.slow`` and run only with ``-m slow`` or
``VISMEM_SLOW=1`` (``TIERS``); the default run still covers every real part at least once, and
every behaviour of a test moved to the slow tier (``vismem.bench.suite.SLOW_TIER`` names the fast
tests that check it). The engine tier (``tests/engine/``, marker ``engine``) runs the real vLLM CPU
engine from ``.venv-engine/`` (``scripts/test_engine.sh``). ``scripts/test.sh`` runs the default
set on two pytest-xdist workers (``pytest_xdist_make_scheduler`` below); each worker has its own
session fixtures (S3 server, Ray), on free ports and in its own temp dirs.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: A ``shared/`` folder named by ``VISMEM_SHARED`` is the suite's data (its ``data/``); otherwise
#: the suite reads what runs read by default (core.paths.default_data_dir: ``../shared/data``
#: beside the checkout, else the per-user data dir, which set-up fills from the pinned sources).
if os.environ.get("VISMEM_SHARED"):
    os.environ.setdefault("VISMEM_DATA_DIR", str(Path(os.environ["VISMEM_SHARED"], "data").resolve()))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("VISMEM_PROGRESS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


#: Test tiers outside the default run: marker -> (the variable that also selects it, what it is).
TIERS = {"slow": ("VISMEM_SLOW", "slow end-to-end test"),
         "engine": ("VISMEM_ENGINE", "engine tier: the real vLLM CPU engine (scripts/test_engine.sh)")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = config.getoption("-m") or ""
    for marker, (var, what) in TIERS.items():
        if os.environ.get(var) == "1" or marker in chosen:
            continue
        skip = pytest.mark.skip(reason=f"{what} (run with -m {marker} or {var}=1)")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


def _fetch_test_data() -> tuple[Path, str]:
    """The default data dir with LoCoMo and DMV-Bench in it, fetched (pinned, checked) where
    missing, as ``vismem run`` does; ``(dir, "")`` or ``(dir, why they could not be had)``."""
    import sys

    from vismem.core.errors import VismemError
    from vismem.core.paths import resolve_data_dir
    from vismem.pipelines.datafetch import AUTO_FETCH, DATASETS, fetch_missing

    root = resolve_data_dir()
    files = {f.path: root / f.path for name in AUTO_FETCH for f in DATASETS[name].files}
    try:
        fetch_missing(files, root, echo=lambda line: print(line, file=sys.stderr))
    except VismemError as err:
        return root, str(err)
    return root, ""


@pytest.fixture(scope="session", autouse=True)
def _test_data() -> tuple[Path, str]:
    """Once per session, before the first test: the data every test (and every run a test
    starts on the default ``data_dir``) reads is in place; a few stat calls when it already is."""
    return _fetch_test_data()


#: Modules that use the session's local Ray (their source names one of these fixtures).
RAY_FIXTURES = ("ray_local",)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: absent without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``scripts/test.sh`` runs xdist workers with ``--dist loadgroup``; the groups are ours: the
    tests on the session's local Ray share one worker (one Ray start-up; two session Rays never
    fight over the cores) and every other test runs with the rest of its module on one worker (its
    module-scoped fixtures -- a shop, a browser -- start once, not once per worker). A test is on
    the session's Ray when it asks for ``ray_local``, directly or through fixtures
    (:func:`_ray_tests`): the other tests of such a module (a run in a fresh process, a pure check)
    need not wait for the Ray worker. xdist's own ``xdist_group`` markers cannot do it under
    pytest 9 (it renames ``item._nodeid``, which pytest 9 no longer reads)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module, _, rest = nodeid.partition("::")
            test = rest.rsplit("::", 1)[-1].split("[", 1)[0]
            ray = _ray_tests(module)
            return "ray" if ray is ALL or test in ray else module

    return ModuleScheduling(config, log)


#: :func:`_ray_tests` of a module whose every test is on the session's Ray.
ALL = frozenset({"*"})


@functools.cache
def _ray_tests(module: str) -> frozenset[str]:
    """The test functions of ``module`` that ask for the session's Ray (``RAY_FIXTURES``) through
    their arguments, the module's fixtures or the conftest files' (ALL: an autouse fixture does,
    or the module names the fixture where its arguments cannot tell, e.g. ``getfixturevalue``)."""
    import ast

    try:
        src = (REPO / module).read_text()
    except OSError:
        return frozenset()
    if not any(name in src for name in RAY_FIXTURES):
        return frozenset()
    fixtures: dict[str, tuple[set[str], bool]] = {}  # name -> (its arguments, autouse)
    tree = ast.parse(src)
    # outermost first; a fixture that overrides one of the same name (``def x(x)``) keeps what the
    # overridden one asked for
    for found in [*(_fixture_args(ast.parse(c.read_text())) for c in _conftests(REPO / module)), _fixture_args(tree)]:
        for name, (args, auto) in found.items():
            old_args, old_auto = fixtures.get(name, (set(), False))
            fixtures[name] = (args | old_args, auto or old_auto)
    needs: dict[str, bool] = {}

    def uses(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in RAY_FIXTURES:
            return True
        if name not in fixtures or name in seen:
            return False
        if name not in needs:
            needs[name] = any(uses(a, seen | {name}) for a in fixtures[name][0])
        return needs[name]

    if any(auto and uses(name) for name, (_, auto) in fixtures.items()):
        return ALL
    lines = src.splitlines()

    def text(f) -> str:  # a function with its decorators (``usefixtures`` marks)
        return "\n".join(lines[min([f.lineno, *(d.lineno for d in f.decorator_list)]) - 1:f.end_lineno])

    defs = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
    tests = [f for f in defs if f.name.startswith("test")]
    ray = {f.name for f in tests if any(uses(a.arg) for a in f.args.args)
           or any(name in text(f) for name in RAY_FIXTURES)}
    # A mention anywhere else (a module-level ``pytestmark``, a class's mark, a helper) may put
    # any test on the Ray: only the whole module is safe.
    rest = src
    for f in (*(f for f in tests if f.name in ray), *(f for f in defs if f.name in fixtures)):
        rest = rest.replace(text(f), "")
    if any(name in rest for name in RAY_FIXTURES):
        return ALL
    return frozenset(ray)


def _conftests(module: Path) -> list[Path]:
    """The conftest files above ``module`` up to the repository, outermost first."""
    out, d = [], module.parent
    while d != REPO.parent and REPO in (d, *d.parents):
        if (d / "conftest.py").is_file():
            out.append(d / "conftest.py")
        d = d.parent
    return out[::-1]


def _fixture_args(tree) -> dict[str, tuple[set[str], bool]]:
    """``name -> (argument names, autouse)`` of the ``@pytest.fixture`` functions in a module."""
    import ast

    out = {}
    for f in ast.walk(tree):
        if not isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for dec in f.decorator_list:
            text = ast.unparse(dec)
            if "fixture" in text:
                args = {a.arg for a in f.args.args}
                # a fixture that asks for the Ray by name in its body (``getfixturevalue``)
                args |= {n for n in RAY_FIXTURES if n in ast.unparse(f)}
                out[f.name] = (args, "autouse=True" in text)
    return out


@pytest.fixture(scope="session")
def data_dir(_test_data) -> Path:
    """The data dir (``locomo/``, ``dmv-bench/``) tests read: the run's default one."""
    root, problem = _test_data
    if problem:
        pytest.fail(f"test data not available in {root}: {problem}")
    return root


def forbid_whole_reads(monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Reading a local file ending in ``suffix`` whole fails the test (a bound must refuse it from
    its size, before any read)."""
    real = Path.read_bytes

    def read(self: Path) -> bytes:
        if self.suffix == suffix:
            pytest.fail(f"{self} was read whole")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read)


#: Sessions of the LoCoMo cut (:func:`locomo_cut`).
CUT_SESSIONS = 2


def cut_locomo(data_dir: Path, dest: Path, sessions: int = CUT_SESSIONS) -> Path:
    """A LoCoMo file at ``dest`` of conv-26 with its first ``sessions`` sessions and the questions
    whose evidence lies in them."""
    data = json.loads((data_dir / "locomo/locomo10.json").read_text())[0]
    conv = data["conversation"]
    keep = {f"session_{i}" for i in range(1, sessions + 1)}
    conv = {k: v for k, v in conv.items() if not k.startswith("session_")
            or k in keep or k.removesuffix("_date_time") in keep}
    inside = tuple(f"D{i}:" for i in range(1, sessions + 1))
    qa = [q for q in data["qa"] if q.get("evidence") and all(e.startswith(inside) for e in q["evidence"])]
    assert qa, f"no question of conv-26 has its evidence in its first {sessions} session(s)"
    dest.write_text(json.dumps([{**data, "conversation": conv, "qa": qa}]))
    return dest


@pytest.fixture(scope="session")
def locomo_cut(data_dir, tmp_path_factory) -> Path:
    """A LoCoMo file of conv-26 with its first two sessions and the questions whose evidence lies in
    them (>= 10): the memshot stage's whole path on a tenth of the rendering, embedding and reading
    of the full conversation (set ``memshot.dataset_path`` to it)."""
    path = cut_locomo(data_dir, tmp_path_factory.mktemp("locomo") / "locomo-cut.json")
    assert len(json.loads(path.read_text())[0]["qa"]) >= 10
    return path


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):
    """One real ``weed mini`` S3 server on 127.0.0.1 for the whole test session."""
    from vismem.core.s3server import LocalS3Server

    srv = LocalS3Server(data_dir=tmp_path_factory.mktemp("weed"), buckets=("vismem", "vismem-test"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def s3_store(s3_server, request):
    """A fresh S3 store prefix on the session's server (one prefix per test)."""
    from vismem.core.store import Store

    prefix = request.node.name.replace("[", "_").replace("]", "").replace("/", "_")[:80]
    return Store.open(f"s3://vismem-test/{prefix}", endpoint_url=s3_server.endpoint_url,
                      access_key=s3_server.access_key, secret_key=s3_server.secret_key)


@pytest.fixture
def file_store(tmp_path):
    from vismem.core.store import Store

    return Store.open(f"file://{tmp_path}/store")


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray for the session: 2 CPUs, a small object store, fractional-CPU actors."""
    import ray

    from vismem.pipelines.settings import RayConfig
    from vismem.pipelines.rayctx import init_ray

    cfg = RayConfig(num_cpus=2, object_store_mb=300, actor_cpus=0.25, concurrency=2)
    init_ray(cfg)
    yield cfg
    ray.shutdown()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's Chromium (installed by the test command); Playwright never downloads a browser."""
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail("chromium is not installed (the test command installs it with apt-get)")
    return path


#: Flags for Chromium on a closed network as root (see README).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
