"""Placeholder until this command lands."""


def add_arguments(parser):
    pass


def run(args):
    print("torchdoctor app: not built yet")
    return 2
