"""Memory-unit variants as data: one YAML per variant in ``memory/dialogue/variants/``.

A variant fixes how a session becomes units: MemShot shots at a maximum height (768, 512, 1024
or the full session), with or without the header, drawn or written as text with exactly the
same units ("w/o Rendering"), or one LoCoMo-format text unit per session (Text RAG).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError

from vismem.core.config import Frozen
from vismem.core.errors import ConfigError, did_you_mean
from vismem.memory.dialogue.style import Style
from vismem.core.yamlsafe import load_yaml

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"


class Variant(Frozen):
    """How a session is turned into memory units."""

    name: str = Field(..., description="Variant name (the YAML file's stem).")
    description: str = Field("", description="What the variant is, with the paper table/row it reproduces.")
    kind: Literal["shots", "session-text"] = Field(
        "shots", description="`shots`: MemShot units packed by height; `session-text`: one LoCoMo-format text unit per session (Text RAG).")
    render: bool = Field(True, description="Draw images; False writes the very same units as text (the 'w/o Rendering' ablation).")
    header: bool = Field(True, description="Show the header (session label and timestamp); False is the 'w/o Header' ablation.")
    pack_header: bool | None = Field(
        None, description="Pack units as if the header band were shown (None: as `header`). The 'w/o Header' "
        "ablation sets true, so it keeps MemShot's units (same turns per unit) and only drops the band.")
    max_height: int | None = Field(768, ge=128, description="Maximum shot height in px; null = one unit per session ('Full Session').")
    overlap_pairs: int = Field(2, ge=0, description="Turn-pairs of the previous unit repeated at the top of the next one.")
    oversize: Literal["auto", "grow", "error"] = Field(
        "auto", description="A turn-pair taller than max_height alone: `grow` the shot (to at most 4 x max_height; a taller pair is split over several shots of at most max_height), or `error`; `auto` grows for LongMemEval (paper A.3) and errors for LoCoMo.")
    style: Style = Field(default_factory=Style, description="Geometry, fonts and colours of the shot.")

    @property
    def packs_header(self) -> bool:
        """Whether packing reserves the header band's height (see ``pack_header``)."""
        return self.header if self.pack_header is None else self.pack_header

    @property
    def is_image(self) -> bool:
        return self.kind == "shots" and self.render

    def oversize_for(self, dataset: str) -> Literal["grow", "error"]:
        """The oversize policy for ``dataset``: the variant's own, or (``auto``) the dataset's."""
        if self.oversize != "auto":
            return self.oversize
        from vismem.memory.dialogue.datasets import get_dataset

        return get_dataset(dataset).oversize


def list_variants() -> list[str]:
    """Names of every variant YAML shipped with the package."""
    return sorted(p.stem for p in VARIANTS_DIR.glob("*.yaml"))


@lru_cache(maxsize=None)
def load_variant(name: str) -> Variant:
    """Load ``variants/<name>.yaml`` (or a path to a YAML file)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else VARIANTS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown memory variant {name!r}{did_you_mean(name, list_variants())}; "
                          f"available: {', '.join(list_variants())}")
    try:
        data = load_yaml(path.read_bytes(), str(path)) or {}
        data.setdefault("name", path.stem)
        return Variant.model_validate(data)
    except (yaml.YAMLError, ValidationError) as err:
        raise ConfigError(f"{path}: invalid variant: {err}") from None
