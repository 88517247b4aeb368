import torch


def make():
    model = torch.nn.Linear(4, 2)
    weights = {"weight": torch.zeros(3, 3)}
    model.load_state_dict(weights)
    return {"model": model, "batch": (torch.ones(2, 4), torch.zeros(2, 2)),
            "loss_fn": torch.nn.MSELoss()}
