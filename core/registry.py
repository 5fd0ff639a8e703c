"""Registries and component specs: every extension point maps names to factories.

A *spec* is ``{"name": str, "args": dict}``: JSON-serialisable, written into the run manifest,
and enough to rebuild the same component on another machine. In configs a spec may also be
given as a bare name or as ``{"model": VARIANT, "args": {...}}`` naming a variant file (model
YAMLs in ``serve/models/``, memory YAMLs in ``memory/agent/variants/``); :class:`ComponentSpec`
is the one config type for all of these, and :meth:`Registry.resolve` the one resolver.

Registration never depends on import order. A registry knows:

* its *built-in* package: every module in it is imported on first lookup (found by walking the
  package, so adding a built-in is adding a module: no list to keep), and
* *plugins* from other packages, declared as data in ``pyproject.toml`` under the entry-point
  group ``vismem.<kind>`` (``name = "module"``), imported on first lookup,

so ``build`` resolves every registered name from a fresh interpreter without the caller
importing anything first.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import threading
from typing import Any, Callable, Generic, Mapping, TypeVar

from pydantic import Field, model_validator

from vismem.core.config import Frozen
from vismem.core.errors import ConfigError, did_you_mean

T = TypeVar("T")


class ComponentSpec(Frozen):
    """A component (VLM, embedder, memory architecture, image source) as configured.

    Exactly one of ``name`` (a registered factory, with ``args``) or ``model`` (a named variant
    file whose ``{name, args}`` it stands for; ``args`` are laid over the variant's). A bare
    string in YAML means ``{name: STRING}``; it may also name a variant.
    """

    name: str | None = Field(None, min_length=1, description="Registered name (e.g. minilm, openai, dualmem).")
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the factory.")
    model: str | None = Field(None, min_length=1,
                              description="Named variant (e.g. qwen3-vl-8b, dualmem-a0.5); replaces name, args override its args.")

    @model_validator(mode="before")
    @classmethod
    def _from_str(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _one_source(self) -> "ComponentSpec":
        if (self.name is None) == (self.model is None):
            raise ValueError("give exactly one of `name` (+ `args`) or `model` (+ `args`)")
        return self

    @property
    def key(self) -> str:
        """What the spec names: the registered name or the variant."""
        return str(self.model or self.name)

    def raw(self) -> dict[str, Any]:
        """The spec as given (unresolved), JSON-able."""
        out: dict[str, Any] = {"model": self.model} if self.model else {"name": self.name}
        out["args"] = dict(self.args)
        return out


Aliases = Callable[[str], "dict[str, Any] | None"]


def builtin_modules(package: str | None) -> list[str]:
    """Every module of ``package`` (its submodules, not sub-packages' insides), sorted: what a
    registry imports to find its built-ins. Private modules (``_name``) are skipped."""
    if package is None:
        return []
    pkg = importlib.import_module(package)
    found = [f"{package}.{m.name}" for m in pkgutil.iter_modules(getattr(pkg, "__path__", []))
             if not m.name.startswith("_")]
    return sorted(found)


class Registry(Generic[T]):
    """Names → factories for one kind of component (VLMs, embedders, memories, ...).

    Args:
        kind: what the registry holds (``vlm``, ``embedder``, ...); its plugin entry-point group
            is ``vismem.<kind>``.
        package: the package whose modules register the built-in factories (every module in it
            is imported on first lookup; None when the registering module defines the registry).
        aliases: ``name -> {name, args} | None``: named variants that expand to a spec.
        variant_names: lists the alias names (for error messages and listings).
    """

    def __init__(self, kind: str, *, package: str | None = None, aliases: Aliases | None = None,
                 variant_names: Callable[[], list[str]] | None = None) -> None:
        self.kind = kind
        self.package = package
        self._aliases = aliases
        self._variant_names = variant_names
        self._factories: dict[str, Callable[..., T]] = {}
        self._stand_in: dict[str, Any] = {}
        self._accelerator: dict[str, Any] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # -- registration -----------------------------------------------------------------------
    def register(self, name: str, *, stand_in: Any = False,
                 accelerator: Any = False) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator: ``@REG.register("name")`` on a class or factory function.

        ``stand_in`` says whether what the factory builds stands in for a model that cannot run
        here (a scripted policy, a tiny random network): ``True``, or a function of the spec's
        args (``lambda args: args["path"].startswith("tiny:")``). Results name stand-ins as such.
        ``accelerator`` (the same forms) says whether it runs a model in-process that wants a GPU
        on a cluster; a client of an endpoint, a CPU model or a scripted policy does not.
        """

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories and self._factories[name] is not factory:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._factories[name] = factory
            self._stand_in[name] = stand_in
            self._accelerator[name] = accelerator
            return factory

        return deco

    def load_plugins(self) -> None:
        """Import every module of the built-in package and every ``vismem.<kind>`` entry point (once)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            for mod in builtin_modules(self.package):
                importlib.import_module(mod)
            from importlib.metadata import entry_points

            for ep in entry_points(group=f"vismem.{self.kind}"):
                importlib.import_module(ep.value.split(":", 1)[0])
            self._loaded = True

    # -- lookup -----------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every registered name (plugins loaded)."""
        self.load_plugins()
        return sorted(self._factories)

    def variants(self) -> list[str]:
        """Named variants that resolve to a spec of this registry."""
        return sorted(self._variant_names()) if self._variant_names else []

    def __contains__(self, name: str) -> bool:
        self.load_plugins()
        return name in self._factories

    def factory(self, name: str) -> Callable[..., T]:
        """The factory registered as ``name`` (plugins loaded): what :meth:`build` calls, for
        reading what it declares (a family's ``Config``, a key function) without building.

        Raises :class:`ConfigError` listing the registered names when ``name`` is not one.
        """
        self.load_plugins()
        if name not in self._factories:
            raise self._unknown(name, None)
        return self._factories[name]

    def _unknown(self, name: Any, field: str | None) -> ConfigError:
        where = f"{field}: " if field else ""
        known = ", ".join(self.names()) or "none"
        variants = self.variants()
        also = f"; named variants: {', '.join(variants)}" if variants else ""
        hint = did_you_mean(name, [*self.names(), *variants])
        return ConfigError(f"{where}unknown {self.kind} {name!r}{hint}; registered: {known}{also}")

    def resolve(self, spec: "ComponentSpec | Mapping[str, Any] | str", *, field: str | None = None) -> dict[str, Any]:
        """The buildable ``{name, args}`` of a spec, a bare name or a named variant.

        Raises :class:`ConfigError` naming ``field`` and the known names when nothing matches.
        """
        self.load_plugins()
        if not isinstance(spec, ComponentSpec):
            try:
                spec = ComponentSpec.model_validate(spec)
            except Exception as err:  # pydantic's message, on one line
                msg = str(err).splitlines()
                raise ConfigError(f"{field or self.kind}: invalid component spec {spec!r}: {msg[-1].strip() if msg else err}") from None
        if spec.name is not None and spec.name in self._factories:
            return {"name": spec.name, "args": dict(spec.args)}
        alias = self._aliases(spec.key) if self._aliases else None
        if alias is None:
            raise self._unknown(spec.key, field)
        if alias["name"] not in self._factories:
            raise self._unknown(alias["name"], field)
        return {"name": alias["name"], "args": {**dict(alias.get("args") or {}), **dict(spec.args)}}

    def check(self, spec: "ComponentSpec | Mapping[str, Any] | str", *, field: str | None = None,
              injected: tuple[str, ...] = ()) -> dict[str, Any]:
        """:meth:`resolve`, then check the args against the factory's signature without building
        it (building may load a model): an unknown or missing argument is a :class:`ConfigError`
        naming ``field``, the argument and the accepted ones (never a value: it may be a secret).

        ``injected``: parameters the builder itself supplies (an image source's ``catalog``).
        """
        resolved = self.resolve(spec, field=field)
        try:
            params = inspect.signature(self._factories[resolved["name"]]).parameters
        except (TypeError, ValueError):  # a builtin or C factory: nothing to check
            return resolved
        named = {n: p for n, p in params.items()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in injected}
        where = f"{field}: " if field else ""
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            unknown = sorted(set(resolved["args"]) - set(named))
            if unknown:
                raise ConfigError(f"{where}{self.kind} {resolved['name']!r} takes no argument(s) {', '.join(unknown)}; "
                                  f"it accepts: {', '.join(named) or 'none'}")
        missing = [n for n, p in named.items() if p.default is p.empty and n not in resolved["args"]]
        if missing:
            raise ConfigError(f"{where}{self.kind} {resolved['name']!r} needs argument(s) {', '.join(missing)}")
        return resolved

    def is_stand_in(self, spec: Mapping[str, Any]) -> bool:
        """Whether a resolved spec builds a stand-in (declared by its factory at registration)."""
        self.load_plugins()
        flag = self._stand_in.get(str(spec.get("name")), False)
        return bool(flag(dict(spec.get("args") or {})) if callable(flag) else flag)

    def wants_accelerator(self, spec: Mapping[str, Any]) -> bool:
        """Whether a resolved spec runs a model in-process that wants a GPU (its registration says)."""
        self.load_plugins()
        flag = self._accelerator.get(str(spec.get("name")), False)
        return bool(flag(dict(spec.get("args") or {})) if callable(flag) else flag)

    def build(self, spec: "ComponentSpec | Mapping[str, Any] | str", *, field: str | None = None) -> T:
        """Build from a spec (resolved first). The result remembers its spec and stand-in status."""
        resolved = self.resolve(spec, field=field)
        obj = self._factories[resolved["name"]](**resolved["args"])
        # A stand-in by registration or by its own account (e.g. a client told it serves one).
        stand_in = self.is_stand_in(resolved) or bool(getattr(obj, "stand_in", False))
        for attr, value in (("spec", resolved), ("stand_in", stand_in)):
            try:
                setattr(obj, attr, value)
            except (AttributeError, TypeError):  # frozen or slotted objects keep no attributes
                pass
        return obj
