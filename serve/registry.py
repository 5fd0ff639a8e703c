"""A tiny registry: every extension point maps names to factories and can rebuild from a spec.

A *spec* is ``{"name": str, "args": dict}``: JSON-serialisable, written into the run manifest,
and enough to rebuild the same component on another machine.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Names → factories for one kind of component (VLMs, embedders, memories, ...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator: ``@REG.register("name")`` on a class or factory function."""

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories and self._factories[name] is not factory:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._factories[name] = factory
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._factories)

    def build(self, spec: dict[str, Any] | str) -> T:
        """Build from ``{"name", "args"}`` (or a bare name). The result remembers its spec."""
        if isinstance(spec, str):
            spec = {"name": spec, "args": {}}
        name, args = spec.get("name"), dict(spec.get("args") or {})
        if name not in self._factories:
            raise KeyError(f"unknown {self.kind} {name!r}; registered: {', '.join(self.names()) or 'none'}")
        obj = self._factories[name](**args)
        try:
            obj.spec = {"name": name, "args": args}  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # frozen or slotted objects keep no spec
            pass
        return obj

    def __contains__(self, name: str) -> bool:
        return name in self._factories
