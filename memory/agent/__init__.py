"""DMV-Bench memory architectures: one protocol, one registry, variants as YAML.

    from vismem.memory.agent import build_architecture, InProcessFeatures, observations_from_steps, replay_chain
    feats = InProcessFeatures(read_blob)
    arch = build_architecture("dualmem", features=feats)       # a variant of variants/*.yaml
    for j in replay_chain(arch, observations_from_steps(step_rows)):
        hook = ArchitectureHook(arch, cue="red wool scarf")    # probes of at_session j

See ``types`` (the contract and its data), ``base`` (the shared bank, the registry),
``features`` (content-addressed features), ``replay``, ``hook``,
``inject`` (official strings) and one module per family.
"""

from vismem.memory.agent.base import ARCHITECTURES, build_architecture, with_components
from vismem.memory.agent.captioner import CAPTIONERS, Captioner, build_captioner
from vismem.memory.agent.features import FeatureSource, FeatureSpec, FeatureTables, InProcessFeatures, MissingFeature
from vismem.memory.agent.tables import TableFeatures, tables_from_frames, tables_to_frames
from vismem.memory.agent.types import MemoryArchitecture, MemoryItem, Observation, Query
from vismem.memory.agent.hook import ArchitectureHook, recall
from vismem.memory.agent.replay import (bank_size_at, chain_streams, observations_from_steps, replay_chain,
                                        replay_session)
from vismem.memory.agent.variants import Variant, list_variants, load_variant

__all__ = [
    "ARCHITECTURES", "ArchitectureHook", "CAPTIONERS", "Captioner", "FeatureSource", "FeatureSpec", "FeatureTables",
    "InProcessFeatures", "MemoryArchitecture", "MemoryItem", "MissingFeature", "Observation", "Query",
    "TableFeatures", "Variant", "bank_size_at", "build_architecture", "build_captioner", "chain_streams", "list_variants",
    "load_variant", "observations_from_steps", "recall", "replay_chain", "replay_session", "tables_from_frames",
    "tables_to_frames", "with_components",
]
