"""Placeholder until this command lands."""


def add_arguments(parser):
    pass


def run(args):
    print("torchdoctor report: not built yet")
    return 2
