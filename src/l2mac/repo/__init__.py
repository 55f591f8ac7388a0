"""Growing a repository l2mac did not write: a branch in a worktree of its own (``worktree.py``), files it
leaves alone (``protected.py``), and a map of the repository ranked by relevance to the change (``map.py``)."""
