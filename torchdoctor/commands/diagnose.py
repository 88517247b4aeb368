"""Placeholder until this command lands."""


def add_arguments(parser):
    pass


def run(args):
    print("torchdoctor diagnose: not built yet")
    return 2
