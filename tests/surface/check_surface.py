"""The stand-in torch's public surface, enumerated from its source: every
parameter of every public function, method and lambda is either used (its
value reaches the body) or declared with `_tracing.no_effect(name="why")`;
no public function is a silent no-op (`pass`, `return self`, `return None`)
unless declared `no_effect(function="why")`. A parameter that is used only to
be rejected (`_tracing.only`, `_tracing.no_kwargs`) counts as used: it is
rejected, not ignored.

Usage: check_surface.py STANDIN_DIR [--list]
Prints one line per violation (file:line: what) and exits 1 if any."""
import ast
import os
import sys

SKIP_ARGS = {"self", "cls"}


def _is_public(name):
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _declared(fn):
    """Names declared by `@..no_effect(name="why", ...)` decorators."""
    names = set()
    for deco in getattr(fn, "decorator_list", ()):
        if isinstance(deco, ast.Call):
            target = deco.func
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name == "no_effect":
                names.update(k.arg for k in deco.keywords if k.arg)
    return names


def _arguments(args):
    every = list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)
    if args.vararg:
        every.append(args.vararg)
    if args.kwarg:
        every.append(args.kwarg)
    return [a.arg for a in every if a.arg not in SKIP_ARGS]


def _used_names(nodes):
    used = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                used.add(sub.id)
    return used


def _body_without_docstring(body):
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _is_silent_noop(fn):
    body = _body_without_docstring(fn.body)
    if not body:
        return True
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # `...`
    if isinstance(stmt, ast.Return):
        v = stmt.value
        return v is None or (isinstance(v, ast.Constant) and v.value is None) or \
            (isinstance(v, ast.Name) and v.id == "self")
    return False


def _raises_only(fn):
    """A function whose body only raises (after imports) rejects every call:
    it ignores nothing and is no silent no-op."""
    if isinstance(fn, ast.Lambda):
        return False
    body = [s for s in _body_without_docstring(fn.body)
            if not isinstance(s, (ast.Import, ast.ImportFrom))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _defaults_other_params(args):
    """Parameter names read only in the default of another parameter do not
    count as uses; collect the default expressions to exclude them."""
    return list(args.defaults) + [d for d in args.kw_defaults if d is not None]


def check_function(fn, where, owner, out):
    name = fn.name if not isinstance(fn, ast.Lambda) else None
    declared = _declared(fn)
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    used = _used_names(body)
    if _raises_only(fn):
        return
    for arg in _arguments(fn.args):
        if arg not in used and arg not in declared:
            out.append(f"{where}:{fn.lineno}: {owner}: parameter '{arg}' is ignored")
    if name is not None and "function" not in declared and _is_silent_noop(fn):
        out.append(f"{where}:{fn.lineno}: {owner}: is a silent no-op")


def _lambda_targets(stmt):
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Lambda):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return []


def check_body(body, where, prefix, out, public_owner=True):
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if public_owner and _is_public(stmt.name):
                check_function(stmt, where, prefix + stmt.name, out)
        elif isinstance(stmt, ast.ClassDef):
            check_body(stmt.body, where, prefix + stmt.name + ".", out,
                       public_owner and _is_public(stmt.name))
        elif public_owner:
            for target in _lambda_targets(stmt):
                if _is_public(target):
                    lam = stmt.value
                    lam.name = None
                    check_function(lam, where, prefix + target, out)


def violations(root):
    out = []
    for folder, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            with open(path) as handle:
                tree = ast.parse(handle.read(), path)
            rel = os.path.relpath(path, os.path.dirname(root))
            check_body(tree.body, rel, "", out)
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    found = violations(os.path.abspath(argv[1]))
    for line in found:
        print(line)
    print(f"{len(found)} surface violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
