"""DMV-Bench agents: prompts (as data), official chain seeding, the ReAct encoding loop, the
scripted shopper stand-in, trajectory records and their cache in the store.

Entry points: :func:`vismem.agents.chains.session_spec`,
:func:`vismem.agents.session.run_session`, :class:`vismem.pipelines.dmv.trajectories.TrajectoryCache`.
Submodules are imported on use so this package stays light.
"""
