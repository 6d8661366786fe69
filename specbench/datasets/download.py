"""Fetch dataset files into a local cache: pinned URLs (sha256-checked) or Hugging Face Hub datasets.

Files land in ``<cache>/<dataset name>/<file name>`` through a temporary file and an atomic rename, only after
the checksum (or row count, for Hub datasets without a pinned checksum) is verified.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

USER_AGENT = "specbench-datasets"


class DatasetUnavailableError(RuntimeError):
    """The dataset is neither at a local path nor in the cache, and downloading it failed."""


class ChecksumError(RuntimeError):
    """Downloaded or cached bytes do not match the pinned sha256 (or the expected row count)."""


def default_cache_dir() -> Path:
    """``$SPECBENCH_CACHE`` if set, else ``~/.cache/specbench/datasets``."""
    return Path(os.environ.get("SPECBENCH_CACHE") or Path.home() / ".cache" / "specbench" / "datasets")


def offline() -> bool:
    """True when ``SPECBENCH_OFFLINE`` or ``HF_DATASETS_OFFLINE`` is set to 1: no download is attempted."""
    return any(os.environ.get(k, "0") not in ("", "0") for k in ("SPECBENCH_OFFLINE", "HF_DATASETS_OFFLINE"))


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_url(url: str, timeout: float = 60.0) -> bytes:
    """GET ``url`` and return the body (tests replace this function)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def load_hub_rows(hub_id: str, config: str | None, split: str, revision: str | None = None) -> list[dict]:
    """Rows of a Hugging Face Hub dataset split, through the ``datasets`` library (tests replace this function)."""
    import datasets

    return list(datasets.load_dataset(hub_id, config, split=split, revision=revision))


@dataclass(frozen=True)
class UrlSource:
    """A file at a pinned URL (a raw GitHub URL at a commit) with its sha256."""

    url: str
    sha256: str
    filename: str = "question.jsonl"

    def fetch(self) -> bytes:
        return fetch_url(self.url)

    def describe(self) -> str:
        return self.url


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face Hub dataset split, stored in the cache as JSON lines of its raw rows."""

    hub_id: str
    config: str | None
    split: str
    revision: str | None = None
    filename: str = "rows.jsonl"
    sha256: str | None = None

    def fetch(self) -> bytes:
        rows = load_hub_rows(self.hub_id, self.config, self.split, self.revision)
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")

    def describe(self) -> str:
        return f"hf://datasets/{self.hub_id} ({self.config or 'default'}, {self.split})"


def count_rows(data: bytes, filename: str) -> int:
    if filename.endswith(".gz"):
        data = gzip.decompress(data)
    return sum(1 for line in data.splitlines() if line.strip())


def verify(data: bytes, source: UrlSource | HubSource, expected_rows: int | None, where: str) -> None:
    """Raise ``ChecksumError`` unless ``data`` has the pinned sha256 and the expected number of rows."""
    if source.sha256 and sha256_of(data) != source.sha256:
        raise ChecksumError(f"{where}: sha256 {sha256_of(data)} does not match the pinned {source.sha256} "
                            f"(source {source.describe()}); delete the file and download again")
    if expected_rows is not None and (n := count_rows(data, source.filename)) != expected_rows:
        raise ChecksumError(f"{where}: {n} rows, expected {expected_rows} (source {source.describe()})")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either no file or the whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def cached_file(name: str, source: UrlSource | HubSource, expected_rows: int | None, cache_dir: str | Path | None,
                *, download: bool = True, force: bool = False) -> Path:
    """Return the verified cache file of dataset ``name``, downloading it when missing (or when ``force``)."""
    path = Path(cache_dir or default_cache_dir()) / name / source.filename
    if path.exists() and not force:
        verify(path.read_bytes(), source, expected_rows, str(path))
        return path
    fixes = (f"pass a local copy (dataset.path=/path/to/{source.filename}, or load_questions(..., path=...)) or run "
             f"once with network access: python -m specbench.datasets download {name}")
    if not download or offline():
        raise DatasetUnavailableError(f"dataset {name!r} is not cached at {path} and downloading is disabled; {fixes}")
    try:
        data = source.fetch()
    except Exception as err:  # network, DNS, HTTP and Hub errors all mean the same thing to the user
        raise DatasetUnavailableError(f"dataset {name!r} is not cached at {path} and could not be downloaded from "
                                      f"{source.describe()} ({type(err).__name__}: {err}); {fixes}") from err
    verify(data, source, expected_rows, source.describe())
    atomic_write(path, data)
    return path
