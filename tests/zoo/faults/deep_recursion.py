import sys

sys.setrecursionlimit(1_000_100)


def walk(node):
    return walk(node + 1)


walk(0)
