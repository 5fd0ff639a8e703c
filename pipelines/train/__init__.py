"""Training scripts for the small models this project ships (run as ``python -m vismem.pipelines.train.NAME``)."""
