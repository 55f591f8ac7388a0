"""Self-organised agents (SoA): the second strategy. ``contracts.py`` holds function contracts and merging;
``organization.py`` the agent tree; ``prompts.yaml`` the agents' prompts."""
