"""``l2mac bench``: generation quality measured with the same model across strategies.

``humaneval`` (function level, HumanEval+ scored by the official evalplus) lives in ``humaneval.py``; the
scorer's environment and sandboxed scoring in ``scorer.py``; prompts in ``prompts.yaml``.
"""
