import torch


def make():
    # The batch has 3 features; the model takes 4: every check that runs the model fails to.
    model = torch.nn.Linear(4, 2)
    return {"model": model, "batch": (torch.ones(2, 3), torch.zeros(2, 2)),
            "loss_fn": torch.nn.MSELoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}
