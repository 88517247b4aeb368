"""Small functions a patch adds to the user's module, and where it puts them.

Some fixes are not an expression at the call site: padding a batch of
variable-length items, detaching a hidden state that may be a tensor, a
tuple of them or None, keeping the checkpoint tensors whose size matches.
The patch then adds one plainly written module-level function next to the
user's code and calls it where the fix belongs. A module-level function can
also be pickled to DataLoader workers, which a lambda cannot. Each helper
imports what it uses itself, so it works whatever names the file imported.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.rewrites.locate import Source

HELPERS: dict[str, str] = {
    "pad_collate": '''\
def pad_collate(batch):
    """Collate a batch whose tensors differ in their first dimension by padding them."""
    import torch
    from torch.nn.utils.rnn import pad_sequence
    from torch.utils.data import default_collate

    first = batch[0]
    if isinstance(first, dict):
        return {key: pad_collate([item[key] for item in batch]) for key in first}
    if isinstance(first, (tuple, list)):
        return [pad_collate(list(field)) for field in zip(*batch)]
    if isinstance(first, torch.Tensor) and first.dim() > 0 and len(
            {item.shape for item in batch}) > 1:
        return pad_sequence(batch, batch_first=True)
    return default_collate(batch)
''',
    "detach_state": '''\
def detach_state(state):
    """The carried state without the previous iteration's graph (tensors, tuples, None)."""
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return type(state)(detach_state(part) for part in state)
    return state.detach()
''',
    "keep_matching_sizes": '''\
def keep_matching_sizes(model, state):
    """The checkpoint, with each tensor whose size differs from the model's replaced by the
    model's own (freshly initialised) one; every other key still has to match."""
    own = model.state_dict()
    return {key: own[key] if key in own and value.shape != own[key].shape else value
            for key, value in state.items()}
''',
}


def defines(src: Source, name: str) -> bool:
    """Whether the module already has a top-level function or name of that name."""
    for statement in src.module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == name:
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name
                        for t in small.targets):
                    return True
    return False


def insertion(src: Source, definition: str) -> tuple[cst.CSTNode, object]:
    """An edit that puts a module-level definition before the first top-level statement
    that is not a docstring or an import: it is defined before any code can call it.

    The edit is a function of the statement as other edits left it, so a fix that also
    changes that statement keeps both changes.
    """
    new = cst.parse_statement(definition)
    blank = [cst.EmptyLine(), cst.EmptyLine()]
    new = new.with_changes(leading_lines=blank)
    body = list(src.module.body)
    anchor = next((s for i, s in enumerate(body) if not _preamble(s, first=i == 0)), None)
    if anchor is None:
        last = body[-1]
        return last, lambda updated: cst.FlattenSentinel([updated, new])

    def before(updated: cst.CSTNode) -> cst.FlattenSentinel:
        lines = list(updated.leading_lines)
        blank = 0
        while blank < len(lines) and lines[blank].comment is None:
            blank += 1
        padding = [cst.EmptyLine()] * max(0, 2 - blank)
        return cst.FlattenSentinel([new, updated.with_changes(leading_lines=padding + lines)])

    return anchor, before


def _preamble(statement: cst.CSTNode, first: bool) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return all(isinstance(small, (cst.Import, cst.ImportFrom)) or (
        first and isinstance(small, cst.Expr)
        and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)))
        for small in statement.body)


def helper_edits(src: Source, name: str) -> list[tuple[cst.CSTNode, object]]:
    """The edit that adds helper ``name`` to the module, or none when it is already there."""
    if defines(src, name):
        return []
    return [insertion(src, HELPERS[name])]
