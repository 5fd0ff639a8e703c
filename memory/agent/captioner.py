"""Captioners: product image → text, for the verbal channels and the adapters' module texts.

The paper holds one captioner fixed for every back-end (Gemini 2.5 Flash, ``captioning.py``) and
the official adapters send their own prompts to that same model (§7.5 #7). So a captioner here
is a *backend* (any VLM spec, or a local stand-in) plus a *task* naming one official prompt:

====================  ==================================  =====  ==============================
task                  official source                      max    system prompt
====================  ==================================  =====  ==============================
``caption``           ``captioning.CAPTION_PROMPT``        200    (none)
``worldmm-semantic``  ``worldmm._SEMANTIC_PROMPT``         120    You write concise memory entries.
``worldmm-visual``    ``worldmm._VISUAL_PROMPT``           120    You write concise memory entries.
``mma``               ``mma.encode`` caption               80     You write product captions.
``m2a``               ``m2a._LocalDualLayerMemory.chat``   80     You write concise visual captions.
====================  ==================================  =====  ==============================

All calls are temperature 0 and the reply is ``.strip()``-ed, as the official clients do.
Architectures combine the configured backend with their task (:func:`captioner_spec`), so the
task is part of the content-addressed feature key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Protocol, runtime_checkable

from vismem.core.registry import ComponentSpec, Registry

#: The official F2 captioner prompt (``dualmem/captioning.py:19-23``), verbatim.
CAPTION_PROMPT = (
    "Describe this product photograph in 2 to 3 sentences. Focus on attributes that would help "
    "someone identify this exact product later (color, shape, material, distinctive features). "
    "Do not invent attributes not visible in the image. Do not number, do not include preamble."
)


@dataclass(frozen=True)
class CaptionTask:
    """One official prompt: what is sent, with which system text and token budget."""

    prompt: str
    system: str | None
    max_tokens: int


#: Every official prompt a memory architecture sends to the captioner model, verbatim.
TASKS: dict[str, CaptionTask] = {
    "caption": CaptionTask(CAPTION_PROMPT, None, 200),
    "worldmm-semantic": CaptionTask(
        "List the abstract attributes that define this product's category and style: 1-2 short "
        "clauses, no visual details, no numbers.", "You write concise memory entries.", 120),
    "worldmm-visual": CaptionTask(
        "List only the visual attributes of this product: color, material, shape, distinctive "
        "marks. One sentence, comma-separated.", "You write concise memory entries.", 120),
    "mma": CaptionTask(
        "Describe this product in one sentence focusing on attributes a memory system could later "
        "retrieve by.", "You write product captions.", 80),
    "m2a": CaptionTask(
        "Caption this product in one sentence; focus on attributes a memory module could retrieve by.",
        "You write concise visual captions.", 80),
}

#: The paper's captioner: Gemini 2.5 Flash through its OpenAI-compatible endpoint with thinking
#: off (the official call sets ``thinking_budget=0``; ``reasoning_effort: none`` is the same
#: switch on that endpoint).
PAPER_CAPTIONER: dict[str, Any] = {
    "name": "vlm",
    "args": {"vlm": {"model": "gemini-2.5-flash", "args": {"extra_body": {"reasoning_effort": "none"}}}},
}


@runtime_checkable
class Captioner(Protocol):
    """Writes the text of one task for one product image (``None``: no image, as the adapters'
    calls are made when a visit has no image)."""

    name: str

    def caption(self, image: bytes | None, *, url_hash: str | None) -> str: ...


def _variant(name: str) -> dict | None:
    return None


#: Registry of captioner backends; every spec carries ``task`` (one of :data:`TASKS`).
CAPTIONERS: Registry[Captioner] = Registry("captioner", aliases=_variant)


def _check_task(task: str) -> CaptionTask:
    if task not in TASKS:
        raise ValueError(f"unknown caption task {task!r}; known: {', '.join(TASKS)}")
    return TASKS[task]


@CAPTIONERS.register("vlm", stand_in=lambda args: _vlm_is_stand_in(args.get("vlm")),
                    accelerator=lambda args: _vlm_wants_accelerator(args.get("vlm")))
class VLMCaptioner:
    """Any VLM (OpenAI-compatible client to vLLM / Ray Serve / hosted APIs, a local model) with the
    official prompt, temperature 0, the task's token budget.

    Args:
        vlm: the VLM spec (``gemini-2.5-flash``, ``{model: qwen3-vl-8b}``, ``{name, args}``),
            resolved through ``vismem.serve.registry.VLMS``.
        task: which official prompt (:data:`TASKS`).
        on_error: ``raise`` (default: a failed call is an error, so a feature job retries it) or
            ``record``: return the official ``<caption error: TYPE>`` text instead.

    The official caption call sends the prompt first, then the image, as one user turn; here the
    serve ``Message`` carries the image with the text (the client's own image-part order).
    """

    def __init__(self, vlm: Any, task: str = "caption", on_error: str = "raise") -> None:
        from vismem.serve.build import build_vlm

        self.task = _check_task(task)
        self.task_name = task
        if on_error not in ("raise", "record"):
            raise ValueError(f"on_error must be 'raise' or 'record', got {on_error!r}")
        self.on_error = on_error
        self.vlm = build_vlm(_plain(vlm))
        self.name = f"vlm:{getattr(self.vlm, 'name', 'vlm')}/{task}"

    def caption(self, image: bytes | None, *, url_hash: str | None = None) -> str:
        from vismem.serve.vlm import Message

        msgs = [Message("system", self.task.system)] if self.task.system else []
        msgs.append(Message("user", self.task.prompt, images=(image,) if image else ()))
        try:
            res = self.vlm.chat(msgs, max_tokens=self.task.max_tokens, temperature=0.0)
        except Exception as err:  # noqa: BLE001 - the official fallback text, when asked for
            if self.on_error == "record":
                return f"<caption error: {type(err).__name__}>"
            raise
        return (res.text or "").strip()


def _plain(spec: ComponentSpec | Mapping[str, Any] | str) -> Mapping[str, Any] | str:
    return spec.raw() if isinstance(spec, ComponentSpec) else spec


def _vlm_is_stand_in(spec: ComponentSpec | Mapping[str, Any] | str | None) -> bool:
    from vismem.serve.registry import VLMS

    if spec is None:
        return False
    return VLMS.is_stand_in(VLMS.resolve(_plain(spec)))


def _vlm_wants_accelerator(spec: ComponentSpec | Mapping[str, Any] | str | None) -> bool:
    from vismem.serve.registry import VLMS

    return spec is not None and VLMS.wants_accelerator(VLMS.resolve(_plain(spec)))


@CAPTIONERS.register("catalogue", stand_in=True)
class CatalogueCaptioner:
    """Local stand-in: writes the task's text from the product's *catalogue attributes* (name,
    collection, style, category), looked up by product hash. It never sees the image, so it
    never mentions the cue object or colour, and it is named a stand-in in every result.

    Args:
        task: which official prompt it imitates (:data:`TASKS`; sets the text's shape).
        data_dir: folder holding ``dmv-bench/`` (default: the shared data beside the checkout).
    """

    def __init__(self, task: str = "caption", data_dir: str | None = None) -> None:
        _check_task(task)
        self.task_name = task
        self.data_dir = data_dir
        self.name = f"catalogue/{task}"

    def caption(self, image: bytes | None, *, url_hash: str | None = None) -> str:
        row = _catalogue(self.data_dir).get(url_hash or "")
        if row is None:
            return ""  # a product-shaped URL outside the catalogue: nothing to describe
        return stand_in_text(self.task_name, **row)


@lru_cache(maxsize=4)
def _catalogue(data_dir: str | None) -> dict[str, dict[str, str]]:
    from vismem.core.paths import resolve_data_dir
    from vismem.env.storefront.catalog import load_catalog

    cat = load_catalog(resolve_data_dir(data_dir) if data_dir else resolve_data_dir(), seed=0)
    cols = cat.collection_by_slug
    return {v.url_hash: {"name": v.name, "cat": v.cat, "style": v.style, "collection": v.collection,
                         "series": cols[v.collection_slug].series} for v in cat.variants}


def stand_in_text(task: str, *, name: str, cat: str, style: str, collection: str, series: str) -> str:
    """The stand-in's text for one product: 2-3 sentences for ``caption``, the official task's
    shape otherwise. Uses only catalogue fields that the storefront shows (audited free of cue
    words), never the cue."""
    noun = {"plant_pot": "plant pot", "wall_art": "wall-art piece"}.get(cat, cat.replace("_", " "))
    look = style.replace("_", "-")
    art = "An" if look[0] in "aeiou" else "A"
    if task == "caption":
        return (f"{art} {look} {noun} from the {collection} collection, photographed on its own. "
                f"It is the {name}, in the {series} series' {look} styling.")
    if task == "worldmm-semantic":
        return f"{look} {noun}; {series} series"
    if task == "worldmm-visual":
        return f"{noun}, {look} styling, {series} series finish"
    if task == "mma":
        return f"{art} {look} {noun}, the {name}."
    return f"{art} {look} {noun} from the {collection} collection."


def captioner_spec(backend: ComponentSpec | Mapping[str, Any] | str, task: str) -> dict[str, Any]:
    """The resolved captioner spec for ``backend`` doing ``task`` (``task`` set in its args)."""
    _check_task(task)
    resolved = CAPTIONERS.resolve(_plain(backend), field="captioner")
    args = dict(resolved["args"])
    args["task"] = task
    if resolved["name"] == "vlm" and "vlm" in args:
        from vismem.serve.registry import VLMS

        args["vlm"] = VLMS.resolve(_plain(args["vlm"]), field="captioner.vlm")
    return {"name": resolved["name"], "args": args}


def build_captioner(spec: ComponentSpec | Mapping[str, Any] | str) -> Captioner:
    """Build a captioner from a (resolved or raw) spec."""
    return CAPTIONERS.build(_plain(spec), field="captioner")
