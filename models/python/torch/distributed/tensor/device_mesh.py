from . import DeviceMesh  # noqa: F401
