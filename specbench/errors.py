"""Errors a user can fix, and how the command line reports them.

A setting or input that cannot work (a model source, a quantization scheme, a dataset file, a backend that needs a
GPU, a run that cannot fit in memory) stops the command with one message that names the setting and what to
change, and exit code 2; Ctrl-C stops it with a line saying what was saved and that rerunning resumes, and exit
code 130. ``HYDRA_FULL_ERROR=1`` or ``--debug`` shows the full traceback instead.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

EXIT_USAGE = 2  # a setting or input to change
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
DEBUG_FLAG = "--debug"


class SpecbenchError(Exception):
    """A problem with a run's settings or inputs; the message names the setting and what to change."""


class ConfigError(SpecbenchError):
    """A setting whose value cannot work."""


class DatasetFileError(SpecbenchError):
    """A dataset file that is missing, empty or not in the dataset's format."""


class DeviceError(SpecbenchError):
    """The run needs a device (a CUDA GPU, an optional kernel package, more memory) that is not there."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Every error type that means "change a setting or an input", not a bug in specbench."""
    from specbench.datasets.download import ChecksumError, DatasetUnavailableError
    from specbench.datasets.registry import UnknownDatasetError
    from specbench.config import ConfigValueError
    from specbench.datasets.sandbox import CodeExecutionNotAllowed, SandboxUnavailable
    from specbench.drafters.draft_model import TokenizerMismatchError
    from specbench.drafters.eagle_head import EagleHeadError
    from specbench.model.config import UnsupportedModelError
    from specbench.model.loading import ModelSourceError
    from specbench.quantization.schemes import QuantConfigError
    from specbench.runner.gpu_pool import NoFreeGPU
    from specbench.runner.run import RunOutOfMemory

    return (SpecbenchError, ConfigValueError, ModelSourceError, UnsupportedModelError, QuantConfigError,
            UnknownDatasetError, DatasetUnavailableError, ChecksumError, CodeExecutionNotAllowed, SandboxUnavailable,
            TokenizerMismatchError, EagleHeadError, NoFreeGPU, RunOutOfMemory)


def debugging() -> bool:
    """Whether to show tracebacks: ``HYDRA_FULL_ERROR=1`` (``--debug`` sets it)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


def take_debug_flag(argv: list[str]) -> list[str]:
    """``argv`` without ``--debug``; when it was there, tracebacks are switched on (``HYDRA_FULL_ERROR=1``)."""
    if DEBUG_FLAG in argv:
        os.environ["HYDRA_FULL_ERROR"] = "1"
    return [a for a in argv if a != DEBUG_FLAG]


def message(err: BaseException) -> str:
    text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)  # KeyError's str() adds quotes
    return str(text).strip()


def stop(text: str, code: int) -> None:
    print(f"specbench: {text}", file=sys.stderr, flush=True)
    raise SystemExit(code)


@contextmanager
def reported(saved: Callable[[], str]) -> Iterator[None]:
    """Turn user errors and Ctrl-C inside the block into one message and an exit code (module docstring).

    ``saved()`` describes what the run has saved so far, for the Ctrl-C message."""
    try:
        yield
    except KeyboardInterrupt:
        if debugging():
            raise
        stop(f"interrupted. {saved()} Rerun the same command to resume: finished questions are skipped.",
             EXIT_INTERRUPTED)
    except user_errors() as err:
        if debugging():
            raise
        stop(f"error: {message(err)}\n(--debug or HYDRA_FULL_ERROR=1 shows the traceback)", EXIT_USAGE)


def saved_questions(folders: list[Path]) -> str:
    """``"Saved 3 questions in results/runs/default (none 2, ngram 1)."``, from the run folders' result files."""
    from specbench.runner.store import ResultStore

    counts = {}
    for folder in map(Path, folders):
        frame = ResultStore(folder).results if folder.is_dir() else None  # compacts an interrupted run's parts
        if frame is not None and len(frame):
            counts[frame.drafter.iloc[0]] = len(frame.drop_duplicates(["question_id", "repeat"]))
    if not sum(counts.values()):
        return "No question was finished, nothing was saved."
    where = sorted({str(Path(f).parent) for f in folders})
    detail = ", ".join(f"{k} {v}" for k, v in counts.items())
    return f"Saved {sum(counts.values())} finished questions under {', '.join(where)} ({detail})."
