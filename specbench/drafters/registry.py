"""The drafter registry: each drafter is one entry, a typed config (its Hydra schema) and a build function.

Adding a drafter: subclass ``DrafterConf`` with its settings and their ``check``, write ``build(conf, ctx, parts)``
returning the drafter, and ``register(Conf, build)`` in its module. ``specbench.engine`` supplies ``parts``
(models, sessions, EAGLE heads) so a drafter never assembles a model stack itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from specbench.config import ConfigValueError, ModelConf, QuantConf
from specbench.decoding.drafter import DraftContext, Drafter


@dataclass
class DrafterConf:
    """Settings every drafter has; a drafter's schema adds its own with defaults and ``check`` bounds."""

    name: str = "none"
    label: Optional[str] = None  # how tables and summaries name this method (default: ``name``)
    # the drafter's own model and EAGLE head, for drafters that run one (draft_model, eagle, hierspec); a target
    # cell sets them for every method of a sweep, so a drafter without one leaves them unused
    head: Optional[str] = None
    model: Optional[ModelConf] = None
    quant: Optional[QuantConf] = None

    def check(self, prefix: str = "drafter") -> None:
        """Raise ``ConfigValueError`` naming ``prefix.key``, the value and the allowed range for a bad setting."""

    def step_shape(self) -> tuple[int, tuple[str, ...], int, int] | None:
        """Eq. (1)'s view of one step: (verified tokens n with the root, verify masks, draft passes d, rows per
        pass); None where Eq. (1) has no term for this drafter."""
        return None


class Parts(Protocol):
    """What a build function may ask the engine for."""

    def model(self, model: ModelConf, quant: QuantConf) -> Any: ...

    def session(self, model: Any) -> Any: ...

    def head(self, source: str, model: Any, kind: str = "eagle") -> Any: ...


@dataclass(frozen=True)
class DrafterEntry:
    conf: type[DrafterConf]
    build: Callable[[Any, DraftContext, Parts], Drafter]


DRAFTERS: dict[str, DrafterEntry] = {}


def register(conf: type[DrafterConf], build: Callable[[Any, DraftContext, Parts], Drafter]) -> None:
    DRAFTERS[conf.name] = DrafterEntry(conf, build)


def drafter_conf(node: DictConfig | dict | DrafterConf, prefix: str = "drafter",
                 target_shape_only: bool = False) -> DrafterConf:
    """The typed, checked config of ``node`` (a ``conf/drafter/`` node, a dict with a ``name``, or a config).

    A run's node arrives resolved; in a dict, a drafter model's default ``shape_only: ${model.shape_only}`` reads
    ``target_shape_only``.
    """
    if not isinstance(node, DrafterConf):
        data = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)
        name = data.get("name", "none")
        if name not in DRAFTERS:
            raise ConfigValueError(f"{prefix}.name={name!r} is not a drafter: use one of {sorted(DRAFTERS)}")
        try:
            run = OmegaConf.create({"model": {"shape_only": target_shape_only}})
            run.drafter = OmegaConf.merge(OmegaConf.structured(DRAFTERS[name].conf), data)
            node = OmegaConf.to_object(run.drafter)
        except OmegaConfBaseException as err:  # a wrong type or an unknown key: say which and what to read
            key = getattr(err, "full_key", None) or "?"
            raise ConfigValueError(f"{prefix}.{key} of drafter {name}: {str(err).splitlines()[0]}; its settings are "
                                   f"the schema in specbench/drafters/{name}.py") from err
    node.check(prefix)
    return node


def defaults(name: str) -> DrafterConf:
    """The shipped settings of drafter ``name`` (its schema's defaults)."""
    return drafter_conf({"name": name})


def build_drafter(conf: DrafterConf, ctx: DraftContext, parts: Parts) -> Drafter:
    """Build the drafter ``conf`` describes (already checked by ``drafter_conf``); the target's runner gets a
    CUDA-graph bucket of exactly the drafter's verify size (``step_shape``), so its T_v(n) runs at n."""
    drafter = DRAFTERS[conf.name].build(conf, ctx, parts)
    shape = conf.step_shape()
    if shape is not None and shape[0] <= ctx.target.runner.scratch:
        ctx.target.runner.add_bucket(shape[0])
    return drafter
