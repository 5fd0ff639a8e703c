"""One YAML loader for everything the project reads: bounded, strict about keys, one-line errors.

``yaml.safe_load`` is safe against code execution but not against its input's size: an alias
bomb (nested anchors, each repeating the one before ten times) composes in microseconds into a
graph whose expansion -- what pydantic validates and the run id hashes -- has 10^9 nodes, and it
takes a mapping with a repeated key without a word (the last one wins). :func:`load_yaml` reads
text that is valid UTF-8, at most ``max_bytes`` long, composes it, counts the nodes the graph
expands to (aliases counted at every use, in linear time) and its nesting depth against bounds,
refuses duplicate keys (naming both lines), and only then builds Python objects. Every failure
is a :class:`~vismem.core.errors.ConfigError` (exit 2) of one line naming the source and the bound.
The bounds are listed in ``docs/bounds.md``.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from vismem.core.errors import ConfigError

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "decode_utf8", "load_yaml", "yaml_error_line"]

#: Largest YAML text read (bytes): a run config or a variant is a few kB.
MAX_YAML_BYTES = 1 << 20
#: Most nodes the document may expand to, every alias counted at each use (the shipped presets: ~300).
MAX_YAML_NODES = 100_000
#: Deepest nesting of mappings and sequences.
MAX_YAML_DEPTH = 64

# The pure-Python loader: its error marks are the ones users see (the C one points past the line).
_Loader = yaml.SafeLoader


class _StrictLoader(_Loader):  # type: ignore[misc, valid-type]
    """A safe loader whose mappings refuse a key given twice (merge keys ``<<`` may override)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # noqa: D102 - PyYAML's hook
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: PyYAML's own error says so
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {first.line + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _StrictLoader.construct_yaml_map)
# YAML 1.2 reads 1e-3 as a number; PyYAML (YAML 1.1) as the string "1e-3", which the strict
# config check would then refuse where a number goes.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text, or a ConfigError naming ``source`` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{source}: not valid UTF-8 text (byte {err.start}: {err.reason})") from None


def yaml_error_line(source: str, err: yaml.YAMLError) -> str:
    """One line: ``invalid YAML in SOURCE line L, column C: what`` (PyYAML's own is 5-7 lines)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    what = " ".join(str(getattr(err, "problem", None) or err).split())
    context = getattr(err, "context", None)
    if context and getattr(err, "problem", None):
        what = f"{what} ({' '.join(str(context).split())})"
    where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"invalid YAML in {source}{where}: {what}"


def _measure(root: Any, source: str, max_nodes: int, max_depth: int) -> None:
    """Refuse a graph that expands past ``max_nodes`` or nests deeper than ``max_depth``.

    Sizes are memoised per node object (an alias is the same object as its anchor), so the count
    of a 10^9-node expansion costs one visit per distinct node; iterative, so depth cannot
    overflow Python's stack before it is measured.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        kids = _children(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > max_nodes:
                raise ConfigError(f"invalid YAML in {source}: it expands to more than {max_nodes:,} nodes "
                                  "(aliases counted at each use); the bound is there to stop alias bombs")
            if depth[key] > max_depth:
                raise ConfigError(f"invalid YAML in {source}: nested deeper than {max_depth} levels")
            continue
        if key in size:
            continue
        if key in on_path:
            raise ConfigError(f"invalid YAML in {source} line {node.start_mark.line + 1}: an alias refers to a "
                              "node that contains it (a recursive structure)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_yaml(text: str | bytes, source: str, *, max_bytes: int = MAX_YAML_BYTES, max_nodes: int = MAX_YAML_NODES,
              max_depth: int = MAX_YAML_DEPTH) -> Any:
    """The document in ``text`` (bytes must be UTF-8), within the bounds above; ConfigError (one
    line naming ``source``) for text too long, not UTF-8, malformed, too large once expanded,
    too deep, or with a key given twice in one mapping."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ConfigError(f"{source}: {size:,} bytes of YAML, more than the {max_bytes:,} allowed")
    if isinstance(text, bytes):
        text = decode_utf8(text, source)
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, source, max_nodes, max_depth)
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        raise ConfigError(yaml_error_line(source, err)) from None
    except RecursionError:
        raise ConfigError(f"invalid YAML in {source}: nested too deep to read") from None
    finally:
        loader.dispose()
