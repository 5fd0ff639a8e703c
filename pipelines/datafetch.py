"""The datasets ``vismem data fetch`` downloads: canonical URLs pinned with size and SHA-256.

Each dataset is a few files placed under the run's data dir (``data_dir`` of the run config; the
run reads them from there by default) in the layout the loaders expect: ``locomo/locomo10.json``,
``dmv-bench/{seed_v2.json,cue_registry.json}``, ``longmemeval/longmemeval_{s,m,oracle}*.json``.
Pins come from the provenance notes of the project's data (``SOURCE.md``): LoCoMo and DMV-Bench
at fixed GitHub commits with known SHA-256s. LongMemEval is read from the Hugging Face dataset
``xiaowu0162/longmemeval-cleaned`` at revision ``98d7416c...`` (a ``resolve/<commit>/`` URL never
changes) and pinned by the hub's LFS SHA-256 and size of each file at that revision. Those pins
could not be checked against a download here (no network); they are the figures several public
projects record independently for these exact files and revision (and quote from the hub's file
pages), while re-uploads by third parties differ -- a download from anywhere else fails the check.
A file with no SHA-256 pin (``None``) is checked for nothing but its pinned size, and
``vismem data`` says so.

``VISMEM_DATA_MIRROR`` (a base URL) replaces every file's host: ``<mirror>/<dataset>/<file>``.

:func:`fetch_missing` is what ``vismem run`` does before any work: the small pinned datasets
(:data:`AUTO_FETCH`) its stages read and the data dir lacks are fetched, checked, and only then
placed there; large or gated data (LongMemEval, the official images) is never fetched implicitly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from vismem.core.errors import ConfigError, did_you_mean

__all__ = ["AUTO_FETCH", "DATASETS", "DataFile", "Dataset", "dataset", "fetch", "fetch_hint", "fetch_missing",
           "fetch_run_inputs", "status"]

_LOCOMO = "https://raw.githubusercontent.com/snap-research/locomo/3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"
_DMV = "https://raw.githubusercontent.com/yyyujintang/DMV-Bench/6ee8a8ea944bb0e47c7ca988e2d9aac28d6a7865"
_LME_REVISION = "98d7416c24c778c2fee6e6f3006e7a073259d48f"
_LME = f"https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/{_LME_REVISION}"
#: file -> (LFS SHA-256, size in bytes) at ``_LME_REVISION`` (see the module docstring).
_LME_PINS = {
    "longmemeval_s_cleaned.json": ("d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442", 277_383_467),
    "longmemeval_m_cleaned.json": ("9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f", 2_737_100_077),
    "longmemeval_oracle.json": ("821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c", 15_388_478),
}
_LME_LICENCE = ("MIT (the license:mit tag of the xiaowu0162/longmemeval-cleaned dataset card, as public audits record "
                "it; not read from here); code: MIT, github.com/xiaowu0162/LongMemEval")


@dataclass(frozen=True)
class DataFile:
    """One file: where it goes under the data dir, its canonical URL and its pins: the SHA-256
    (None: unknown) and the size in bytes, always known (the download stops there)."""

    path: str
    url: str
    sha256: str | None
    size: int


@dataclass(frozen=True)
class Dataset:
    """A fetchable dataset: its files (data first, licence last) and its licence in words."""

    name: str
    licence: str
    files: tuple[DataFile, ...]
    note: str = ""


DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("locomo", "CC BY-NC 4.0 (Creative Commons Attribution-NonCommercial 4.0), snap-research/locomo", (
        DataFile("locomo/locomo10.json", f"{_LOCOMO}/data/locomo10.json",
                 "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4", 2_805_274),
        DataFile("locomo/LICENSE", f"{_LOCOMO}/LICENSE.txt",
                 "41003d4a74749c0220e33dd415042164b5a1093ed401f36277234f772d22d3d0", 19_347))),
    Dataset("dmv-bench", "Apache License 2.0, yyyujintang/DMV-Bench", (
        DataFile("dmv-bench/seed_v2.json", f"{_DMV}/data/vismem_diag_v2/seed_v2.json",
                 "09bfb430a4fb8c062a7b249f6db0a6241501c90aa0f8347457bdd94b26555543", 708_925),
        DataFile("dmv-bench/cue_registry.json", f"{_DMV}/data/vismem_diag_v2/cue_registry.json",
                 "76549998e21fbbdcbc31a512ce0c17da275824107e06f6fd2f6b5676089bd088", 226_578),
        DataFile("dmv-bench/LICENSE", f"{_DMV}/LICENSE",
                 "3f9371432468f698656133b31e7cf37e1b220f5254a5afe9efdbc88add9f4cf2", 11_318)),
        note="catalogue images (Hugging Face yyyujintang/DMV-Bench-Images) are not fetched"),
    *(Dataset(f"longmemeval-{k}", _LME_LICENCE, (DataFile(f"longmemeval/{f}", f"{_LME}/{f}", *_LME_PINS[f]),),
              note=f"hub revision {_LME_REVISION[:7]}; run with "
                   f"--set memshot.dataset=longmemeval --set memshot.dataset_path=longmemeval/{f}")
      for k, f in (("s", "longmemeval_s_cleaned.json"), ("m", "longmemeval_m_cleaned.json"),
                   ("oracle", "longmemeval_oracle.json"))),
)}


#: Datasets a run fetches by itself when its stages read them and they are missing: a few MB each,
#: pinned by SHA-256. The LongMemEval files (up to 2.7 GB) are only ever fetched on request.
AUTO_FETCH = ("locomo", "dmv-bench")


def dataset(name: str) -> Dataset:
    """The dataset called ``name``; an unknown name is a one-line error listing the known ones."""
    if name not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}{did_you_mean(name, list(DATASETS))}; known: {', '.join(DATASETS)}")
    return DATASETS[name]


def fetch_hint(path: Path, data_dir: Path) -> str:
    """``"; `vismem data fetch NAME` downloads it"`` when ``path`` is a file of a fetchable
    dataset under ``data_dir``, else ``""`` (for the error that says a data file is missing)."""
    hit = _owner(path, data_dir)
    return f"; `vismem data fetch {hit[0].name}` downloads it into the data dir" if hit else ""


def _url(ds: Dataset, f: DataFile) -> str:
    from vismem.core.envvars import env_http_url

    mirror = env_http_url("VISMEM_DATA_MIRROR")
    return f"{mirror}/{ds.name}/{Path(f.path).name}" if mirror else f.url


def file_state(data_dir: Path, f: DataFile) -> str:
    """``missing``, ``partial`` (a resumable ``.part``), ``verified`` (sha256 matches),
    ``present, unverified`` (no pinned sha256) or ``mismatch: ...``."""
    from vismem.core.download import file_sha256

    p = data_dir / f.path
    if not p.is_file():
        return "partial" if p.with_name(p.name + ".part").is_file() else "missing"
    if p.stat().st_size != f.size:
        return f"mismatch: {p.stat().st_size:,} bytes, expected {f.size:,}"
    if f.sha256 is None:
        return "present, unverified"
    return "verified" if file_sha256(p).hexdigest() == f.sha256 else "mismatch: sha256 differs from the pin"


def status(data_dir: Path) -> list[dict[str, Any]]:
    """One record per dataset: ``name``, ``state`` (the worst of its files'), ``files`` (path: state),
    ``licence``, ``note``."""
    out = []
    rank = ["verified", "present, unverified", "partial", "missing"]
    for ds in DATASETS.values():
        files = {f.path: file_state(data_dir, f) for f in ds.files}
        states = list(files.values())
        bad = [s for s in states if s.startswith("mismatch")]
        state = bad[0] if bad else max(states, key=rank.index)
        out.append({"name": ds.name, "state": state, "files": files, "licence": ds.licence, "note": ds.note})
    return out


def fetch(name: str, data_dir: Path, *, progress: Callable[[str, int, int | None], None] | None = None,
          timeout: float = 60.0) -> list[tuple[str, str]]:
    """Download dataset ``name`` into ``data_dir`` (files already verified are kept, partial ones
    resumed); returns ``[(path, "kept" | "downloaded")]``. Raises ``DataError`` on a mismatch."""
    from vismem.core.download import download

    ds = dataset(name)
    done = []
    for f in ds.files:
        if file_state(data_dir, f) == "verified":
            done.append((f.path, "kept"))
            continue
        dest = data_dir / f.path
        if dest.is_file() and f.sha256 is None:
            done.append((f.path, "kept"))  # no pin to check it against: a finished download stays
            continue
        cb = (lambda n, _p=f.path, _s=f.size: progress(_p, n, _s)) if progress else None
        download(_url(ds, f), dest, sha256=f.sha256, size=f.size, timeout=timeout, progress=cb)
        done.append((f.path, "downloaded"))
    return done


def _owner(path: Path, data_dir: Path) -> tuple[Dataset, DataFile] | None:
    """The dataset and pinned file that ``path`` (under ``data_dir``) is, if any."""
    try:
        rel = Path(path).resolve().relative_to(Path(data_dir).resolve()).as_posix()
    except ValueError:
        return None
    return next(((ds, f) for ds in DATASETS.values() for f in ds.files if f.path == rel), None)


def fetch_missing(files: dict[str, Path], data_dir: Path, *, echo: Callable[[str], None]) -> list[str]:
    """Fetch the :data:`AUTO_FETCH` datasets that ``files`` (a run's inputs, by role) need and
    ``data_dir`` lacks; ``echo`` gets one line per file placed. Returns the files placed.

    Everything is downloaded and checked in a temporary folder first and moved into ``data_dir``
    only once all of it matched its pins: offline, or on a checksum failure, a ``DataError`` (one
    line: the file, the command, ``VISMEM_DATA_MIRROR``, ``data_dir``) leaves ``data_dir`` as it
    was. A present file is never replaced (it may be the user's own edit of the data).
    """
    import tempfile

    wanted: list[str] = []
    for role, path in files.items():
        # A role that is a dataset file's own path (``dmv-bench/seed_v2.json``) names it even where
        # the stage looks elsewhere for it (env.storefront.catalog.dmv_dir: the folder itself).
        hit = next(((ds, f) for ds in DATASETS.values() for f in ds.files if f.path == role), None)
        hit = hit or _owner(path, data_dir)
        if hit and hit[0].name in AUTO_FETCH and not Path(path).is_file() and hit[0].name not in wanted:
            wanted.append(hit[0].name)
    if not wanted:
        return []
    with tempfile.TemporaryDirectory(prefix="vismem-fetch-") as tmp:
        for name in wanted:
            _download_checked(DATASETS[name], Path(tmp), data_dir)
        return [path for name in wanted for path in _place(DATASETS[name], Path(tmp), data_dir, echo)]


def _download_checked(ds: Dataset, tmp: Path, data_dir: Path) -> None:
    """Every file of ``ds`` into ``tmp``, checked against its pins; a failure is the run's one line."""
    from vismem.core.download import download
    from vismem.core.errors import DataError
    from vismem.core.secrets import strip_userinfo

    for f in ds.files:
        try:
            download(_url(ds, f), tmp / f.path, sha256=f.sha256, size=f.size)
        except DataError as err:
            raise DataError(
                f"{data_dir / f.path}: missing and could not be fetched ({strip_userinfo(str(err))}); "
                f"fetch it with `vismem data fetch {ds.name}` (VISMEM_DATA_MIRROR=<base URL> reads "
                f"<dataset>/<file> from a mirror), or set data_dir to a folder that holds it "
                f"(data_dir is {data_dir})") from None


def _place(ds: Dataset, tmp: Path, data_dir: Path, echo: Callable[[str], None]) -> list[str]:
    """Move ``ds``'s checked files from ``tmp`` to where ``data_dir`` lacks them, one line each."""
    import shutil

    from vismem.core.errors import DataError
    from vismem.core.secrets import strip_userinfo

    placed = []
    for f in ds.files:
        dest = data_dir / f.path
        if dest.exists():
            continue
        staged = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tmp / f.path, staged)  # beside dest: the rename is atomic for a concurrent reader
            os.replace(staged, dest)
        except OSError as err:
            staged.unlink(missing_ok=True)
            raise DataError(f"{dest}: fetched but cannot be written into data_dir {data_dir} "
                            f"({err.strerror or err}); set data_dir to a writable folder") from None
        what = f"licence {ds.licence}" if f.path.endswith("LICENSE") else "pinned SHA-256 checked"
        echo(f"data: fetched {f.path} into {data_dir} ({dest.stat().st_size / 2**20:,.2f} MiB, {what}) "
             f"from {strip_userinfo(_url(ds, f))}")
        placed.append(f.path)
    return placed


def fetch_run_inputs(config: Any, *, echo: Callable[[str], None]) -> list[str]:
    """:func:`fetch_missing` for a run config's inputs (``RunConfig.input_files``) in its local
    data dir; must run before the run id is taken, which hashes the inputs' content."""
    from vismem.core.datadir import is_remote
    from vismem.core.paths import resolve_data_dir

    if is_remote(config.data_dir):  # object storage: copied as it is (core.datadir), never filled
        return []
    return fetch_missing(config.input_files(), resolve_data_dir(config.data_dir), echo=echo)
