"""Start-up validation of settings: an error names the key, the value and what is allowed."""

from __future__ import annotations

from typing import Any


COMPILE_SCOPES = (None, "layer")  # engine.compile_scope: None compiles each bucket's whole forward


class ConfigValueError(ValueError):
    """A setting holds a value outside its allowed range; raised before any model is built."""


def require(ok: bool, key: str, value: Any, allowed: str) -> None:
    """Raise ``ConfigValueError`` for ``key=value`` unless ``ok``; ``allowed`` says which values are accepted."""
    if not ok:
        raise ConfigValueError(f"{key}={value!r} is not allowed: {allowed}")


def check_engine(engine) -> None:
    """Refuse engine settings that cannot be honoured: retired ones (the keys stay so that older configs still load)
    and a compile scope without compilation or outside the known ones."""
    require(engine.fuse_projections, "engine.fuse_projections", engine.fuse_projections,
            "true only: the decoder is built with q/k/v and gate/up stacked (one forward path); drop the override")
    require(engine.compile or engine.compile_scope is None, "engine.compile_scope", engine.compile_scope,
            "null unless engine.compile=true (it says what to compile)")
    require(engine.compile_scope in COMPILE_SCOPES, "engine.compile_scope", engine.compile_scope,
            "null (compile each bucket's whole forward) or layer (each decoder layer's halves, shared by all layers)")
