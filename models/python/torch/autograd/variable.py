"""torch.autograd.variable: Variable, as PyTorch still exports it (Megatron's
pipeline schedules import it for Variable._execution_engine.run_backward,
which is not modelled and stops the trace)."""
from . import Variable  # noqa: F401
