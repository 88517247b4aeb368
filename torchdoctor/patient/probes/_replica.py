"""The old import path of training.py, until it imports from the module named for each job."""

from torchdoctor.patient.probes._copies import replica, standard_optimizer
from torchdoctor.patient.probes._errors import describe_error
from torchdoctor.patient.probes._frames import exception_location, user_frame
from torchdoctor.patient.probes._modules import module_of, top_module
from torchdoctor.patient.probes._training_step import finite, loss_value, plain_step

__all__ = ["describe_error", "exception_location", "finite", "loss_value", "module_of",
           "plain_step", "replica", "standard_optimizer", "top_module", "user_frame"]
