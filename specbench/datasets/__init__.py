"""Prompt sets (Spec-Bench, MT-bench, EAGLE's subsets, HumanEval, GSM8K, ...), prompting and accuracy scoring.

``load_questions(name, ...)`` returns ``Question`` records; files are downloaded once into a checksummed cache
(``python -m specbench.datasets download NAME``) or read from a local ``path``. See docs/datasets.md.
"""

from specbench.datasets.download import ChecksumError, DatasetUnavailableError, default_cache_dir
from specbench.datasets.prompting import LLAMA2_SYSTEM_PROMPT, Prompt, build_prompt, stop_token_ids
from specbench.datasets.questions import Question
from specbench.datasets.registry import DatasetSpec, dataset_file, get_dataset, list_datasets, load_questions
from specbench.datasets.sandbox import CodeExecutionNotAllowed, SandboxUnavailable
from specbench.datasets.scoring import extract_gsm8k_answer, gsm8k_accuracy, humaneval_pass_at_1

__all__ = [
    "ChecksumError", "DatasetUnavailableError", "default_cache_dir", "LLAMA2_SYSTEM_PROMPT", "Prompt",
    "build_prompt", "stop_token_ids", "Question", "DatasetSpec", "dataset_file", "get_dataset", "list_datasets",
    "load_questions", "CodeExecutionNotAllowed", "SandboxUnavailable", "extract_gsm8k_answer", "gsm8k_accuracy",
    "humaneval_pass_at_1",
]
