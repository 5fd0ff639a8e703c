"""Per-stage config models. Each stage owns one module; ``vismem.pipelines.config`` assembles them."""
