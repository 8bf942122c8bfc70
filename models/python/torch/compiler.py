"""torch.compiler: nothing is ever compiled, so its decorators are identities
and code always runs eagerly (which is what shardproof traces)."""


from . import _tracing


@_tracing.no_effect(recursive="nothing is compiled, so there is nothing to disable")
def disable(fn=None, recursive=True):
    return fn if fn is not None else (lambda f: f)


def allow_in_graph(fn):
    return fn


assume_constant_result = allow_in_graph


def is_compiling():
    return False


is_dynamo_compiling = is_exporting = is_compiling


@_tracing.no_effect(function="nothing is compiled, so there is no cache to reset")
def reset():
    return None
