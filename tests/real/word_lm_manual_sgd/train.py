"""Word-level language model (LSTM) trained with hand-written SGD updates and gradient clipping."""

import torch
from torch import nn

torch.manual_seed(1111)
NTOKENS, BPTT, BATCH, LR, CLIP = 1000, 35, 20, 20.0, 0.25


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=64, nhid=64, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)).view(-1, NTOKENS), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


train_data = torch.randint(0, NTOKENS, (BPTT * 4 + 1, BATCH))
model = RNNModel(NTOKENS)
criterion = nn.NLLLoss()


def train():
    model.train()
    hidden = model.init_hidden(BATCH)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, BPTT)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(torch.log_softmax(output, dim=-1), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for p in model.parameters():
            p.add_(p.grad, alpha=-LR)
        print(f"batch {batch}: loss {loss.item():.3f}")


train()
