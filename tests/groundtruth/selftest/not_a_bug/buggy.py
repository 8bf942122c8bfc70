# Not a bug: the correct module of tests/fixtures/tp_mlp, loaded unchanged.
# The ground-truth harness must reject this pair as a wrong fixture.
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "tp_mlp_correct", os.path.join(os.path.dirname(__file__), "correct.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
entry = _module.entry
