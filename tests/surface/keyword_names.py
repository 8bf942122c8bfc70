"""Parameter names of the stand-in torch against real PyTorch's: code may pass
any argument by the keyword PyTorch gives it (`torch.addmm(input=b, mat1=x,
mat2=w)`, `linear.forward(input=x)`), and a stand-in parameter of another
name turns that call into a TypeError.

Two halves, as the differential test has them:

  /usr/bin/python3 keyword_names.py --real OUT.json
      Under Debian's real PyTorch: the signatures of torch.*, Tensor.*,
      torch.nn.functional.* and the forward and reset_parameters of the
      torch.nn layers. Python-level functions by inspect.signature; builtins
      by their documented signatures (the `name(...)` lines of the
      docstring, every overload), corrected where the documentation names
      a parameter otherwise than the binding (DOCUMENTED_OTHERWISE).

  keyword_names.py REAL.json [--all]       (inside shardproof's interpreter)
      Compares each stand-in callable of ENFORCED with PyTorch's: every
      parameter PyTorch accepts by keyword must be a parameter of the
      stand-in of that name, and with a single signature the positional
      parameters must come in PyTorch's order. Prints one line per
      mismatch and exits 1 if any. With --all, lists the mismatches of
      every stand-in callable real PyTorch has too (not enforced): the
      mechanical search for the next ones to fix.
"""
import inspect
import json
import re
import sys

# Where the docstring's names are not the binding's (checked by calling
# real PyTorch 1.13 with the keywords): the binding's, per overload.
def _sig(positional, keyword_only=()):
    return [[n, "positional"] for n in positional] + [[n, "keyword_only"] for n in keyword_only]


DOCUMENTED_OTHERWISE = {
    "torch.where": [_sig(["condition"]), _sig(["condition", "input", "other"], ["out"])],
    "Tensor.mul": [_sig(["other"])], "Tensor.mul_": [_sig(["other"])],
    "Tensor.div": [_sig(["other"], ["rounding_mode"])],
    "Tensor.div_": [_sig(["other"], ["rounding_mode"])],
    "Tensor.matmul": [_sig(["other"])],
    "Tensor.narrow": [_sig(["dim", "start", "length"])],
    "Tensor.copy_": [_sig(["other", "non_blocking"])],
    # undocumented in 1.13: the binding's own
    "torch.softmax": [_sig(["input", "dim", "dtype"], ["out"])],
    "torch.log_softmax": [_sig(["input", "dim", "dtype"], ["out"])],
    "torch.relu": [_sig(["input"])],
    "Tensor.softmax": [_sig(["dim", "dtype"])],
}

# The callables whose keyword names the test enforces: the ones in common
# use by training code, each checked to match.
ENFORCED = """
torch.add torch.sub torch.mul torch.div torch.matmul torch.mm torch.bmm
torch.addmm torch.baddbmm torch.addcmul torch.addcdiv torch.lerp torch.outer
torch.exp torch.log torch.tanh torch.sigmoid torch.sqrt torch.rsqrt torch.sum
torch.mean torch.softmax torch.log_softmax torch.clamp torch.transpose
torch.reshape torch.maximum torch.minimum torch.where torch.cat torch.stack
torch.split torch.chunk torch.cumsum torch.logsumexp torch.relu torch.full
torch.max torch.min torch.numel
Tensor.add Tensor.add_ Tensor.sub Tensor.sub_ Tensor.mul Tensor.mul_ Tensor.div
Tensor.div_ Tensor.addcmul Tensor.addcmul_ Tensor.addcdiv Tensor.addcdiv_
Tensor.lerp Tensor.lerp_ Tensor.matmul Tensor.mm Tensor.bmm Tensor.stride
Tensor.size Tensor.sum Tensor.transpose Tensor.clamp Tensor.clamp_
Tensor.masked_fill Tensor.masked_fill_ Tensor.copy_ Tensor.narrow Tensor.softmax
Tensor.unsqueeze Tensor.flatten Tensor.eq Tensor.ne Tensor.lt Tensor.le Tensor.gt
Tensor.ge Tensor.fill_ Tensor.pow Tensor.outer Tensor.float Tensor.half Tensor.bfloat16
Tensor.double Tensor.long Tensor.int Tensor.bool
torch.eq torch.ne torch.lt torch.le torch.gt torch.ge torch.logical_and torch.logical_or
torch.permute torch.zeros_like torch.ones_like torch.empty_like torch.full_like
torch.nn.functional.linear torch.nn.functional.gelu torch.nn.functional.relu
torch.nn.functional.silu torch.nn.functional.softmax
torch.nn.functional.log_softmax torch.nn.functional.logsigmoid
torch.nn.functional.layer_norm torch.nn.functional.embedding
torch.nn.functional.dropout torch.nn.functional.pad
torch.nn.functional.mse_loss torch.nn.functional.cross_entropy
torch.nn.Linear.forward torch.nn.Linear.reset_parameters
torch.nn.LayerNorm.forward torch.nn.LayerNorm.reset_parameters
torch.nn.Embedding.forward torch.nn.Embedding.reset_parameters
torch.nn.Dropout.forward torch.nn.GELU.forward torch.nn.ReLU.forward
torch.nn.SiLU.forward torch.nn.Tanh.forward torch.nn.Sigmoid.forward
torch.nn.LogSigmoid.forward torch.nn.Softmax.forward torch.nn.LogSoftmax.forward
torch.nn.Sequential.forward torch.nn.Identity.forward torch.nn.MSELoss.forward
torch.nn.CrossEntropyLoss.forward
""".split()

_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional_only",
          inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
          inspect.Parameter.KEYWORD_ONLY: "keyword_only",
          inspect.Parameter.VAR_POSITIONAL: "var_positional",
          inspect.Parameter.VAR_KEYWORD: "var_keyword"}


def _from_inspect(fn, drop_self):
    params = list(inspect.signature(fn).parameters.values())
    if drop_self and params:
        params = params[1:]
    return [[p.name, _KINDS[p.kind]] for p in params]


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    return parts + ([cur] if cur.strip() else [])


def _from_doc_line(args):
    """One documented signature, `input, dim, keepdim=False, *, out=None`."""
    sig, keyword_only = [], False
    for part in _split_top(args):
        part = part.replace("\\", "").strip().split("=")[0].strip()  # `\*` in rst
        if part == "*":
            keyword_only = True
        elif part.startswith("**"):
            sig.append([part[2:], "var_keyword"])
        elif part.startswith("*"):
            sig.append([part[1:], "var_positional"])
            keyword_only = True
        elif part.isidentifier():
            sig.append([part, "keyword_only" if keyword_only else "positional"])
        else:
            return None  # not a signature (prose that looks like one)
    return sig


def _from_doc(fn, name):
    doc = getattr(fn, "__doc__", None) or ""
    found = []
    for args in re.findall(r"^\s*(?:\.\. function:: )?" + re.escape(name) +
                           r"\((.*?)\)\s*(?:->.*)?$", doc, re.M):
        sig = _from_doc_line(args)
        if sig is not None and sig not in found:
            found.append(sig)
    return found


def _real_signatures(qualname, fn, drop_self):
    if qualname in DOCUMENTED_OTHERWISE:
        return DOCUMENTED_OTHERWISE[qualname]
    try:
        sig = _from_inspect(fn, drop_self)
        if [k for _, k in sig] != ["var_positional", "var_keyword"]:
            return [sig]
    except (TypeError, ValueError):
        pass
    return _from_doc(fn, qualname.rsplit(".", 1)[1])


def dump_real(out_path):
    import torch
    import torch.nn.functional as F
    table = {}

    def add(qualname, fn, drop_self=False):
        sigs = _real_signatures(qualname, fn, drop_self)
        if sigs:
            table[qualname] = sigs

    for name in dir(torch):
        fn = getattr(torch, name, None)
        if not name.startswith("_") and callable(fn) and not inspect.isclass(fn) \
                and not inspect.ismodule(fn):
            add(f"torch.{name}", fn)
    for name in dir(torch.Tensor):
        fn = getattr(torch.Tensor, name, None)
        if not name.startswith("_") and callable(fn) and not inspect.isclass(fn):
            add(f"Tensor.{name}", fn, drop_self=inspect.isfunction(fn))
    for name in dir(F):
        fn = getattr(F, name, None)
        if not name.startswith("_") and callable(fn) and not inspect.isclass(fn) \
                and not inspect.ismodule(fn):
            add(f"torch.nn.functional.{name}", fn)
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if inspect.isclass(cls) and issubclass(cls, torch.nn.Module):
            for method in ("forward", "reset_parameters"):
                fn = cls.__dict__.get(method) or getattr(cls, method, None)
                if inspect.isfunction(fn):
                    add(f"torch.nn.{name}.{method}", fn, drop_self=True)
    with open(out_path, "w") as f:
        json.dump(table, f, indent=0, sort_keys=True)


def _standin(qualname):
    """The stand-in callable of `qualname`, with whether its first
    parameter is self; None where the stand-in has none (not modelled)."""
    import torch
    parts = qualname.split(".")
    if parts[0] == "Tensor":
        obj, parts = torch.Tensor, parts[1:]
    else:
        obj, parts = torch, parts[1:]
    try:
        for p in parts:
            obj = inspect.getattr_static(obj, p) if inspect.isclass(obj) else getattr(obj, p)
    except AttributeError:
        return None, False
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__, isinstance(obj, classmethod)
    if isinstance(obj, property) or not callable(obj):
        return None, False
    method = qualname.startswith("Tensor.") or qualname.startswith("torch.nn.") and \
        qualname.split(".")[2][:1].isupper()
    return obj, method


def mismatches(real_sigs, fn, method):
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return ["has no signature to compare"]
    if method and params:
        params = params[1:]
    by_keyword = {p.name for p in params if p.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    positional = [p.name for p in params if p.kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    found = []
    for sig in real_sigs:
        for name, kind in sig:
            if kind in ("positional", "keyword_only") and name not in by_keyword:
                message = f"PyTorch's '{name}' is not a parameter of the stand-in's"
                if message not in found:
                    found.append(message)
    if len(real_sigs) == 1:
        real_positional = [n for n, k in real_sigs[0]
                           if k in ("positional", "positional_only")]
        if positional[:len(real_positional)] != real_positional and \
                not any(k == "var_positional" for _, k in real_sigs[0]):
            found.append(f"positional parameters {positional}, PyTorch's {real_positional}")
    return found


def check_standin(real_path, every):
    with open(real_path) as f:
        real = json.load(f)
    failed = 0
    names = sorted(real) if every else ENFORCED
    for qualname in names:
        if qualname not in real:
            print(f"FAIL {qualname}: no signature of real PyTorch to compare with", flush=True)
            failed += 1
            continue
        fn, method = _standin(qualname)
        if fn is None:
            if not every:
                print(f"FAIL {qualname}: the stand-in has no such callable", flush=True)
                failed += 1
            continue
        found = mismatches(real[qualname], fn, method)
        if found:
            failed += 1
            print(f"{'MISMATCH' if every else 'FAIL'} {qualname}: " + "; ".join(found), flush=True)
    print(f"{len(names)} callables, {failed} with mismatched parameter names", flush=True)
    return 1 if failed and not every else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--real":
        dump_real(argv[2])
        return 0
    if len(argv) in (2, 3) and argv[1] != "--real":
        return check_standin(argv[1], every="--all" in argv[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
