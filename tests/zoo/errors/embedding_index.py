"""A bag-of-embeddings text classifier whose tokenizer knows more words than the Embedding.

The vocabulary grew to 1010 tokens after the model was built for 1000, so a
few token ids run past the table.
Run: python embedding_index.py  ->  IndexError: index out of range in self
"""

import torch
from torch import nn

VOCAB_SIZE = 1000  # BUG: the tokenizer now emits ids up to 1009


class TextClassifier(nn.Module):
    def __init__(self, vocab_size=VOCAB_SIZE, dim=32, num_classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.encoder = nn.Sequential(nn.Linear(dim, 64), nn.ReLU())
        self.head = nn.Linear(64, num_classes)

    def forward(self, tokens):
        x = self.embedding(tokens)  # RAISES
        x = x.mean(dim=1)
        return self.head(self.encoder(x))


def make_batch(batch_size=16, length=12):
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 990, (batch_size, length), generator=generator)
    tokens[3, 5] = 1004  # words the new tokenizer added
    tokens[9, 0] = 1009
    labels = torch.randint(0, 4, (batch_size,), generator=generator)
    return tokens, labels


def harness():
    torch.manual_seed(0)
    model = TextClassifier()
    return {"model": model, "batch": make_batch(), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3)}


def main():
    parts = harness()
    model, (tokens, labels) = parts["model"], parts["batch"]
    loss = parts["loss_fn"](model(tokens), labels)
    loss.backward()
    parts["optimizer"].step()


if __name__ == "__main__":
    main()
