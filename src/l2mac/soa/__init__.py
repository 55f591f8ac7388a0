"""Self-organised agents (SoA): the second strategy. ``contracts.py`` holds function contracts and merging;
``drafts.py`` the lead's first draft of the modules a task gives; ``organization.py`` the agent tree;
``prompts.yaml`` the agents' prompts."""
