"""Phase five: turn a confirmed cause into a patch of the user's code and prove it on a copy.

``causes`` reads what a session confirmed, ``workspace`` copies the user's
project to a scratch folder, ``verification`` reruns the copy before and
after the patch, ``attempts`` ties them together for every confirmed cause,
and ``writing`` puts a verified patch into the user's file, with a backup,
only when the user asks.
"""
