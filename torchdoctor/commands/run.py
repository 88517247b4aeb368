"""Placeholder until this command lands."""


def add_arguments(parser):
    pass


def run(args):
    print("torchdoctor run: not built yet")
    return 2
