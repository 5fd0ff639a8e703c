"""Per-stage config models. Each stage owns one module; ``pipelines.config`` assembles them."""
