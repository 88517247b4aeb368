"""Rewrites of the user's own source: a knowledge-base fix turned into a patch.

The knowledge base names a rewrite operation and literal parameters (it never
carries code); an operation here finds the nodes it applies to in the user's
file and rewrites them. Finding and rewriting both work on LibCST's concrete
syntax tree rather than on ``ast``: ``ast`` drops comments, blank lines and the
user's own formatting, so a diff made from it would touch every line it
re-printed, while LibCST re-emits everything it was not asked to change byte
for byte, and the diff shows only the fix.
"""
