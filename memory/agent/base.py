"""The shared bank every architecture family builds on, and the one registry.

An architecture ingests *observations* (product-page visits replayed from cached trajectories),
keeps a bank of unique products in encode order, retrieves for a query, and injects recalled
items into a :class:`vismem.agents.memory.MemoryContext` (text block + images). Every architecture and
variant is data: ``{name, args}`` builds it through :data:`ARCHITECTURES` (the names are the
families below; the YAML variants in ``variants/`` resolve as names too), and its nested
components (text/visual encoder, captioner) are specs resolved through serve's registries and
:data:`vismem.memory.agent.captioner.CAPTIONERS`, never constructed inline.

Families (registered names): ``no-memory``, ``verbal`` (TextOnly, Caption), ``dual`` (DualMem
and its ablations), ``worldmm``, ``mma``, ``m2a``. The contract they fulfil and its data
(:class:`~vismem.memory.agent.types.MemoryArchitecture`, ``Observation``, ``Query``,
``MemoryItem``) live in :mod:`vismem.memory.agent.types`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

import numpy as np
from pydantic import ValidationError

from vismem.agents.memory import MemoryContext
from vismem.core.config import Frozen
from vismem.core.errors import ConfigError
from vismem.core.registry import ComponentSpec, Registry
from vismem.memory.agent.inject import INJECTORS, Rendered, format_block
from vismem.memory.agent.scoring import rank
from vismem.memory.agent.types import MemoryItem, Observation, Query

if TYPE_CHECKING:
    from vismem.memory.agent.features import FeatureSource, FeatureSpec


class ArchitectureBase:
    """The bank every family shares: unique products in encode order, the session clock, the
    injector, feature binding, and naming (components and stand-ins).

    Subclasses set ``family``, ``Config`` (a pydantic model: every arg documented, unknown args
    an error), and implement ``_components`` / ``_ingest`` / ``_scores`` (and ``documents`` when
    they embed texts).
    """

    family: ClassVar[str] = "base"
    Config: ClassVar[type[Frozen]]

    def __init__(self, **args: Any) -> None:
        try:
            self.config = self.Config(**args)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "args"
            raise ConfigError(f"memory {self.family}: {where}: {first.get('msg')}") from None
        self.name = self.family
        self.variant: str | None = None
        self.features: "FeatureSource | None" = None
        self._specs: dict[str, FeatureSpec] = self._components()
        self._inject = INJECTORS.build(self._injector_name())
        self.reset()

    def _injector_name(self) -> str:
        """The :data:`INJECTORS` name items render with: the family's ``inject`` argument (a
        family without one overrides this)."""
        return self.config.inject  # type: ignore[attr-defined]

    # -- components and naming ---------------------------------------------------------------
    def _components(self) -> dict[str, "FeatureSpec"]:
        """Role → FeatureSpec of every nested component (``visual``, ``text``, ``captioner``...)."""
        return {}

    def _other_components(self) -> dict[str, tuple[str, bool]]:
        """Role → (label, stand_in) of components that are not features (a routing VLM)."""
        return {}

    def _roles(self) -> dict[str, tuple[str, bool]]:
        out = {role: (fs.label, fs.stand_in) for role, fs in self._specs.items()}
        out.update(self._other_components())
        return out

    def required_features(self) -> list["FeatureSpec"]:
        """The (kind, spec) features this architecture reads; a job precomputes their union."""
        return list(dict.fromkeys(self._specs.values()))

    def documents(self, obs: Observation, features: "FeatureSource") -> list[tuple["FeatureSpec", str]]:
        """The document texts ``encode(obs)`` will embed (with their encoder), given captions."""
        return []

    @property
    def stand_in(self) -> bool:
        """Whether any component stands in for a model that cannot run here."""
        return any(flag for _, flag in self._roles().values())

    def describe(self) -> dict[str, Any]:
        """Name, family and every component with its stand-in status (for manifests/results)."""
        comps: dict[str, dict[str, Any]] = {role: {"label": label, "stand_in": flag}
                                            for role, (label, flag) in self._roles().items()}
        for role, fs in self._specs.items():
            comps[role].update(kind=fs.kind, key=fs.key)
        return {"name": self.name, "family": self.family, "variant": self.variant,
                "spec": getattr(self, "spec", None), "components": comps, "stand_in": self.stand_in,
                "label": self.label}

    @property
    def label(self) -> str:
        """``dualmem [visual=tiny-siglip2 (stand-in), text=minilm, captioner=catalogue/caption (stand-in)]``."""
        roles = self._roles()
        if not roles:
            return self.name
        parts = [f"{role}={label}{' (stand-in)' if flag else ''}" for role, (label, flag) in roles.items()]
        return f"{self.name} [{', '.join(parts)}]"

    def bind(self, features: "FeatureSource") -> "ArchitectureBase":
        """Attach the feature source encode/retrieve/inject read from."""
        self.features = features
        return self

    @property
    def _f(self) -> "FeatureSource":
        if self.features is None:
            raise RuntimeError(f"memory {self.name}: no feature source bound (build_architecture(..., features=...))")
        return self.features

    # -- the bank ----------------------------------------------------------------------------
    def reset(self) -> None:
        """Empty the bank (a new chain) and set the clock to session 0."""
        self.items: list[MemoryItem] = []
        self._index: dict[str, int] = {}
        self.last_channels: dict[str, np.ndarray] = {}
        self.session = 0
        self._reset()

    def _reset(self) -> None:
        """Subclasses clear their channels here."""

    def set_session(self, j: int) -> None:
        """The replay clock: the 0-based session being replayed (or probed)."""
        self.session = int(j)

    def __contains__(self, slug: object) -> bool:
        return slug in self._index

    def __len__(self) -> int:
        return len(self.items)

    def entries(self) -> list[MemoryItem]:
        """The bank in encode order."""
        return list(self.items)

    def encode(self, obs: Observation) -> None:
        """Ingest one visit. A product already banked is left as it is (the replay rule; the
        official banks rely on the replay for it, ours also hold it themselves)."""
        if obs.url_hash in self._index:
            return
        item = self._ingest(obs)
        self._index[item.slug] = len(self.items)
        self.items.append(item)

    def _ingest(self, obs: Observation) -> MemoryItem:
        raise NotImplementedError

    def _item(self, obs: Observation, caption: str | None) -> MemoryItem:
        return MemoryItem(slug=obs.url_hash, image_key=obs.image_key or None, encode_text=obs.encode_text,
                          caption=caption, session=self.session, position=len(self.items))

    # -- retrieval and injection -------------------------------------------------------------
    def retrieve(self, query: Query, k: int = 10) -> list[MemoryItem]:
        """The top ``k`` entries for ``query``, best first (ties in encode order)."""
        self.last_channels = {}
        if not self.items or k <= 0:
            return []
        scores = self._scores(query)
        return [replace(self.items[i], score=float(scores[i])) for i in rank(scores, k)]

    def _scores(self, query: Query) -> np.ndarray:
        """The fused score of every entry; a family with several channels also leaves each
        channel's scores (bank order) in ``self.last_channels`` for :meth:`channel_scores`."""
        raise NotImplementedError

    def channel_scores(self, items: list[MemoryItem]) -> list[dict[str, float | None]]:
        """Per recalled item (of the latest :meth:`retrieve`): ``fused`` (the ranking score) and
        each channel's own score (``visual``, ``verbal``, ...; None where the entry has none)."""
        out = []
        for it in items:
            row: dict[str, float | None] = {}
            for name, arr in self.last_channels.items():
                v = float(arr[it.position]) if it.position < len(arr) else float("nan")
                row[name] = round(v, 6) if np.isfinite(v) else None
            row["fused"] = round(it.score, 6) if np.isfinite(it.score) else None
            out.append(row)
        return out

    def render(self, item: MemoryItem) -> Rendered:
        """One item as this architecture's injector writes it."""
        return self._inject(item)

    def inject(self, items: list[MemoryItem]) -> MemoryContext:
        """The memory block (official §3.4 format) and its images, in reference order."""
        text, keys = format_block([self.render(i) for i in items])
        return MemoryContext(text=text, images=tuple(self._f.image_bytes(k) for k in keys))


def _variant_alias(name: str) -> dict | None:
    from vismem.memory.agent.variants import variant_spec

    return variant_spec(name)


def _variant_names() -> list[str]:
    from vismem.memory.agent.variants import list_variants

    return list_variants()


#: Registry of memory architectures: the families, plus every YAML variant as a named spec.
ARCHITECTURES: Registry[ArchitectureBase] = Registry(
    "memory",
    package="vismem.memory.agent.architectures",
    aliases=_variant_alias, variant_names=_variant_names)


def _raw(spec: ComponentSpec | Mapping[str, Any] | str) -> Mapping[str, Any] | str:
    return spec.raw() if isinstance(spec, ComponentSpec) else spec


def build_architecture(spec: ComponentSpec | Mapping[str, Any] | str, *, features: "FeatureSource | None" = None,
                       field: str | None = None) -> ArchitectureBase:
    """Build from ``{name, args}``, ``{model: VARIANT, args}`` or a bare family/variant name, and
    bind ``features``. A variant's name becomes the architecture's ``name`` (results use it)."""
    raw = _raw(spec)
    arch = ARCHITECTURES.build(raw, field=field)
    key = ComponentSpec.model_validate(raw).key
    if key not in ARCHITECTURES:  # it named a variant
        arch.name = arch.variant = key
    if features is not None:
        arch.bind(features)
    return arch


def with_components(spec: ComponentSpec | Mapping[str, Any] | str, components: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with component args replaced where its family uses them (e.g. the local preset's
    ``{"captioner": "catalogue", "visual_encoder": "tiny-siglip2"}`` over a paper variant); a key
    the family lacks, or leaves unset (TextOnly's captioner), is ignored. Keeps a variant a
    variant (``{model, args}``) so it keeps its name."""
    raw = ComponentSpec.model_validate(_raw(spec))
    resolved = ARCHITECTURES.resolve(raw)
    fields = ARCHITECTURES.factory(resolved["name"]).Config.model_fields  # type: ignore[attr-defined]
    extra = {k: v for k, v in components.items()
             if k in fields and resolved["args"].get(k, fields[k].default) is not None}
    out = raw.raw()
    out["args"] = {**out["args"], **extra}
    return out

