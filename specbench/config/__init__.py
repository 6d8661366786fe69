"""Typed settings shared by the runner, the engine builder and the drafters (no other package imported)."""

from specbench.config.checks import ConfigValueError, check_engine, require
from specbench.config.schema import EngineConf, ModelConf, QuantConf

__all__ = ["ConfigValueError", "EngineConf", "ModelConf", "QuantConf", "check_engine", "require"]
