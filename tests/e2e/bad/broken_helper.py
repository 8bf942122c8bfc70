# A helper module whose own import fails.
import torch

raise ImportError("helper needs a newer torch")
