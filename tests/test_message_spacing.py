"""A message whose spaces a page dropped where it joined a wrapped line is still read.

A forum or an issue page that rewraps a pasted line can lose the space at the join
("Attempting todeserialize object ..."); the long fixed phrase of the message is
found with the spaces left out on both sides, at the wording tier, never confident.
"""

from __future__ import annotations

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose

KB = load_knowledge(include_user=False, use_cache=False, report=False)


def test_a_phrase_joined_without_its_space_is_still_the_message():
    paste = ("RuntimeError: Attempting todeserialize object on a CUDA device but "
             "torch.cuda.is_available() is False. If you are running on a CPU-only machine, "
             "please use torch.load with map_location=torch.device('cpu')")
    top = diagnose(paste, KB).to_dict()["matches"][0]
    assert top["entry"] == "device.cuda_checkpoint_without_cuda"
    assert not top["confident"]


def test_words_that_merely_share_letters_are_no_phrase():
    # The same letters spread over unrelated words never make up a long phrase.
    paste = "RuntimeError: attempting to load a model on the device went wrong somehow"
    entries = [m["entry"] for m in diagnose(paste, KB).to_dict()["matches"]]
    assert "device.cuda_checkpoint_without_cuda" not in entries
