"""Models known by short name: their Hugging Face ids and the configs shipped for shape-only runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path


@dataclass(frozen=True)
class KnownModel:
    name: str
    hub_id: str

    def shipped_config(self) -> dict:
        text = resources.files("specbench.model.configs").joinpath(f"{self.name}.json").read_text()
        return json.loads(text)


KNOWN_MODELS = {
    m.name: m
    for m in (
        KnownModel("llama-3-8b-instruct", "meta-llama/Meta-Llama-3-8B-Instruct"),
        KnownModel("llama-3-70b-instruct", "meta-llama/Meta-Llama-3-70B-Instruct"),
        KnownModel("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        KnownModel("llama-3.2-1b-instruct", "meta-llama/Llama-3.2-1B-Instruct"),
        KnownModel("llama-3.3-70b-instruct", "meta-llama/Llama-3.3-70B-Instruct"),
        KnownModel("qwen3-8b", "Qwen/Qwen3-8B"),
    )
}


ASSETS = Path(__file__).resolve().parent.parent / "assets"
SHIPPED = {  # the tiny trained family shipped with the package (see assets/tiny/MODEL_CARD.md)
    "tiny-target": ASSETS / "tiny" / "target",
    "tiny-draft": ASSETS / "tiny" / "draft",
    "tiny-eagle": ASSETS / "tiny" / "eagle",
}


def shipped_path(name: str) -> Path | None:
    """The folder of a model shipped with specbench, by short name."""
    return SHIPPED.get(name)


def known_model(name_or_hub_id: str) -> KnownModel | None:
    """Look a model up by short name or by its hub id."""
    if name_or_hub_id in KNOWN_MODELS:
        return KNOWN_MODELS[name_or_hub_id]
    return next((m for m in KNOWN_MODELS.values() if m.hub_id == name_or_hub_id), None)
