#include "frontend/python/term_module.h"

#include "models/ir/linker.h"
#include "models/terms/evaluate.h"
#include "models/terms/witness.h"

#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace shardproof::frontend {

using terms::TermId;

namespace {
RecordingContext *g_context = nullptr;
PyObject *g_symbolic_error = nullptr;   // _shardproof.SymbolicControlFlow
PyObject *g_timeout_error = nullptr;    // _shardproof.TraceTimeout
PyObject *g_unmodelled_error = nullptr; // _shardproof.UnmodelledValue

struct TermObject {
  PyObject_HEAD TermId id;
};

extern PyTypeObject TermType;

terms::TermStore &store() { return *g_context->store; }

// A term used or a recording made with no trace recording (a value kept past
// its rank's run, or computed by the driver itself) is a Python error, never
// a dereference of a store that is gone.
template <auto Fn> struct InTrace;
template <typename R, typename... A, R (*Fn)(A...)> struct InTrace<Fn> {
  static R call(A... args) {
    if (!g_context) {
      PyErr_SetString(PyExc_RuntimeError,
                      "shardproof: a symbolic value was used, or a tensor op recorded, "
                      "outside a traced run");
      if constexpr (std::is_pointer_v<R>)
        return nullptr;
      else
        return -1;
    }
    return Fn(args...);
  }
};
template <auto Fn> constexpr auto in_trace = &InTrace<Fn>::call;

// A METH_VARARGS | METH_KEYWORDS function as PyMethodDef stores it.
PyCFunction with_keywords(PyObject *(*fn)(PyObject *, PyObject *, PyObject *)) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fn));
}

PyObject *wrap(TermId id) {
  auto *obj = PyObject_New(TermObject, &TermType);
  if (obj)
    obj->id = id;
  return reinterpret_cast<PyObject *>(obj);
}

bool is_term(PyObject *o) { return PyObject_TypeCheck(o, &TermType); }

// Stops at symbolic control flow since the driver last asked: a stop the
// analysed code caught (a bare `except:`) must still end the run unproved.
long g_symbolic_stops = 0;

// Python numbers (and numpy scalars) become exact constants.
std::optional<TermId> to_term(PyObject *o) {
  if (is_term(o))
    return reinterpret_cast<TermObject *>(o)->id;
  if (PyBool_Check(o))
    return o == Py_True ? store().one() : store().zero();
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow)
      return store().constant(mpq_class(std::to_string(v)));
    PyObject *text = PyObject_Str(o);
    if (!text)
      return std::nullopt;
    TermId t = store().constant(mpq_class(PyUnicode_AsUTF8(text)));
    Py_DECREF(text);
    return t;
  }
  // An unmodelled value (import_policy.OpaqueValue) stands for its opaque term.
  if (PyObject_HasAttrString(o, "_shardproof_term")) {
    PyObject *term = PyObject_GetAttrString(o, "_shardproof_term");
    std::optional<TermId> t;
    if (term && is_term(term))
      t = reinterpret_cast<TermObject *>(term)->id;
    Py_XDECREF(term);
    return t;
  }
  if (PyFloat_Check(o) || PyObject_HasAttrString(o, "__float__")) {
    // Our own probe: an array of terms refuses float() and the operation goes
    // to its other operand (ndarray.__rmul__); that refusal is no stop.
    long stops = g_symbolic_stops;
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
      g_symbolic_stops = stops;
      PyErr_Clear();
      return std::nullopt;
    }
    return store().constant_from_double(v); // -inf, inf, NaN: extended values
  }
  return std::nullopt;
}

PyObject *symbolic_error(const char *what) {
  ++g_symbolic_stops;
  PyErr_Format(g_symbolic_error,
               "%s depends on a symbolic tensor value; shardproof proves "
               "properties for all values and cannot follow one branch",
               what);
  return nullptr;
}

// An operation on an extended value (-inf, NaN) that no sound rule decides
// (term_store.h): the trace stops here unproved, as at symbolic control flow,
// whose exception this one specialises (the driver reports both as "could
// not prove" at the line).
PyObject *unmodelled_error(const char *what) {
  ++g_symbolic_stops;
  PyErr_Format(g_unmodelled_error,
               "%s over the extended reals is not modelled here: no sound rule "
               "decides it (an infinity times a symbolic value of unknown sign, a "
               "symbolic choice of an infinity or NaN, a symbolic value divided by 0)",
               what);
  return nullptr;
}

PyObject *wrap_checked(TermId id, const char *what) {
  if (store().is_unmodelled(id))
    return unmodelled_error(what);
  return wrap(id);
}

template <typename Fn>
PyObject *binary(PyObject *a, PyObject *b, Fn fn, const char *what) {
  auto x = to_term(a);
  if (!x) {
    if (PyErr_Occurred())
      return nullptr;
    Py_RETURN_NOTIMPLEMENTED;
  }
  auto y = to_term(b);
  if (!y) {
    if (PyErr_Occurred())
      return nullptr;
    Py_RETURN_NOTIMPLEMENTED;
  }
  return wrap_checked(fn(*x, *y), what);
}

// x / 0 as IEEE computes it for a concrete x (inf, -inf, NaN); a symbolic
// numerator's sign is unknown. Inside terms inv(0) = 0 keeps inv total.
TermId divide(TermId x, TermId y) {
  if (!store().is_const(y) || store().const_value(y) != 0)
    return store().div(x, y);
  if (store().is_extended(x))
    return store().mul(x, store().one()); // +-inf / 0 keeps its sign (0 is +0)
  if (!store().is_const(x))
    return store().extended(terms::Extended::Unmodelled);
  int sign = sgn(store().const_value(x));
  return store().extended(sign > 0   ? terms::Extended::PosInf
                          : sign < 0 ? terms::Extended::NegInf
                                     : terms::Extended::NaN);
}

PyObject *term_add(PyObject *a, PyObject *b) {
  return binary(
      a, b, [](TermId x, TermId y) { return store().add(x, y); }, "a sum");
}
PyObject *term_sub(PyObject *a, PyObject *b) {
  return binary(
      a, b, [](TermId x, TermId y) { return store().sub(x, y); }, "a difference");
}
PyObject *term_mul(PyObject *a, PyObject *b) {
  return binary(
      a, b, [](TermId x, TermId y) { return store().mul(x, y); }, "a product");
}
PyObject *term_div(PyObject *a, PyObject *b) {
  return binary(
      a, b, [](TermId x, TermId y) { return divide(x, y); }, "a quotient");
}
PyObject *term_neg(PyObject *a) {
  return wrap_checked(store().neg(reinterpret_cast<TermObject *>(a)->id), "a negation");
}
PyObject *term_pos(PyObject *a) {
  Py_INCREF(a);
  return a;
}
PyObject *term_abs(PyObject *a) {
  TermId x = reinterpret_cast<TermObject *>(a)->id;
  return wrap_checked(store().max(x, store().neg(x)), "abs");
}

TermId power(TermId base, long exponent) {
  TermId result = store().one();
  for (long k = 0; k < std::labs(exponent); ++k)
    result = store().mul(result, base);
  return exponent < 0 ? store().inv(result) : result;
}

PyObject *term_pow(PyObject *a, PyObject *b, PyObject *) {
  if (!is_term(a)) // number ** term: only exp-like forms, which we do not model
    return symbolic_error("an exponent");
  TermId base = reinterpret_cast<TermObject *>(a)->id;
  if (PyLong_Check(b))
    return wrap_checked(power(base, PyLong_AsLong(b)), "a power");
  if (PyFloat_Check(b)) {
    double e = PyFloat_AsDouble(b);
    if (e == std::floor(e) && std::fabs(e) < 64)
      return wrap_checked(power(base, static_cast<long>(e)), "a power");
    if (e == 0.5)
      return wrap_checked(store().app(terms::Fn::Sqrt, base), "sqrt");
    if (e == -0.5)
      return wrap_checked(store().app(terms::Fn::Rsqrt, base), "rsqrt");
  }
  PyErr_SetString(PyExc_NotImplementedError,
                  "shardproof: only integer and +-0.5 powers of symbolic values "
                  "are modelled");
  return nullptr;
}

// ---- value-dependent decisions (models/terms/witness.h) ------------------

// The values of `terms` at the path's witness; nullopt when there is no path
// or a term reads a value that has none there (a collective's result no
// earlier pass linked, an unmodelled value).
std::optional<std::vector<double>> witness_values(std::span<const TermId> roots) {
  if (!g_context->witness)
    return std::nullopt;
  static const terms::KnownPlaceholderValues kNone;
  return terms::values_at_witness(
      store(), roots, *g_context->witness, g_context->trace->witness_names,
      g_context->known_placeholders ? *g_context->known_placeholders : kNone);
}

// The collective placeholders `roots` read: results this run holds as
// placeholders, not as the values the ranks are linked to. Until then one
// may be any value PyTorch can hold, an infinity or NaN included (a rank
// that sends inf). Each is recorded as needed: the next tracing pass gives
// its call's linked result as terms where it can (python_frontend.cpp).
std::vector<TermId> unlinked(std::span<const TermId> roots) {
  std::vector<TermId> found;
  std::unordered_set<TermId> seen;
  std::vector<TermId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    TermId t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second)
      continue;
    if (store().is_var(t)) {
      if (store().variable(t).kind == terms::VarKind::Placeholder)
        found.push_back(t);
      continue;
    }
    const auto &args = store().node(t).args;
    stack.insert(stack.end(), args.begin(), args.end());
  }
  g_context->trace->needs_linked.insert(found.begin(), found.end());
  return found;
}

// What stops a run that asks `what` of a collective's result it holds as a
// placeholder (unlinked): the call, and why no pass gave it.
PyObject *unlinked_error(const std::string &what, TermId placeholder) {
  ++g_symbolic_stops;
  const terms::Variable &v = store().variable(placeholder);
  PyErr_Format(g_symbolic_error,
               "%s reads a collective's result not linked yet (%s from %s): a later "
               "tracing pass gives it as terms only where it links to values of the "
               "reference's inputs that every rank reached",
               what.c_str(), v.name.c_str(), v.origin.c_str());
  return nullptr;
}

// A comparison with an infinity or NaN is folded as for a finite real
// (term_store.h): of a placeholder, that is known only once it is linked.
bool finite_or_linked(TermId x, TermId y, const char *what) {
  auto infinite = [](TermId t) {
    return store().is_extended(t) && !store().is_unmodelled(t);
  };
  for (auto [a, b] : {std::pair{x, y}, std::pair{y, x}})
    if (infinite(a) && !store().is_concrete(b)) {
      TermId roots[] = {b};
      if (auto missing = unlinked(roots); !missing.empty()) {
        unlinked_error(what, missing.front());
        return false;
      }
    }
  return true;
}

// Where a truth value was asked for: the analysed code's line, as the
// stand-in names it (torch._tracing.location), else the innermost frame.
ir::SourceLoc python_location() {
  ir::SourceLoc loc;
  if (PyObject *tracing = PyImport_ImportModule("torch._tracing")) {
    // (file, line, function, column)
    PyObject *where = PyObject_CallMethod(tracing, "location", nullptr);
    if (where && PyTuple_Check(where) && PyTuple_Size(where) >= 2) {
      const char *file = PyUnicode_AsUTF8(PyTuple_GetItem(where, 0));
      long line = PyLong_AsLong(PyTuple_GetItem(where, 1));
      if (file && line >= 0)
        loc = {file, static_cast<int>(line), 0, ""};
    }
    Py_XDECREF(where);
    Py_DECREF(tracing);
  }
  PyErr_Clear();
  if (!loc.file.empty())
    return loc;
  if (PyFrameObject *frame = PyEval_GetFrame()) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    if (const char *file = PyUnicode_AsUTF8(code->co_filename))
      loc.file = file;
    loc.line = PyFrame_GetLineNumber(frame);
    Py_DECREF(code);
  }
  return loc;
}

void record_decision(TermId condition, bool holds, ir::SourceLoc loc, std::string what) {
  g_context->trace->path.push_back({condition, holds, std::move(loc), std::move(what)});
}

// The truth value of `x`: 1, 0, or -1 with a Python error set.
int decide(TermId x) {
  if (store().is_concrete(x) && store().is_extended(x))
    return 1; // bool(-inf) and bool(nan) are True
  if (store().is_const(x))
    return store().const_value(x) != 0;
  // A comparison decides a branch: the path's witness takes one side.
  if (store().is_bool(x)) {
    TermId roots[] = {x};
    if (auto value = witness_values(roots)) {
      bool holds = value->front() != 0;
      record_decision(x, holds, python_location(), "a branch on a comparison");
      return holds;
    }
    if (auto missing = unlinked(roots); !missing.empty()) {
      unlinked_error("a branch on a comparison", missing.front());
      return -1;
    }
  }
  symbolic_error("a Python truth value");
  return -1;
}

int term_bool(PyObject *a) { return decide(reinterpret_cast<TermObject *>(a)->id); }

// A concrete term's value as a Python float: -inf, inf and NaN included.
double concrete_double(TermId x) {
  if (store().is_const(x))
    return store().const_value(x).get_d();
  return terms::DoubleEvaluator(store(), [](TermId) { return 0.0; })(x).value_or(NAN);
}

PyObject *term_float(PyObject *a) {
  TermId x = reinterpret_cast<TermObject *>(a)->id;
  if (store().is_const(x))
    return PyFloat_FromDouble(store().const_value(x).get_d());
  if (store().is_concrete(x))
    return PyFloat_FromDouble(concrete_double(x));
  // float() itself gives a SymbolicFloat (symbolic_float): what asks here
  // is C code that needs the double.
  return symbolic_error("a C double (math.log, numpy's float64, a C extension)");
}

PyObject *python_int(const mpz_class &value) {
  return PyLong_FromString(value.get_str().c_str(), nullptr, 10);
}

// operator.index(): an integer constant only. A fraction is no index, as a
// float is none (numpy probes for one and goes on), and not symbolic either.
PyObject *term_index(PyObject *a) {
  TermId x = reinterpret_cast<TermObject *>(a)->id;
  if (store().is_const(x) && store().const_value(x).get_den() == 1)
    return python_int(store().const_value(x).get_num());
  if (store().is_const(x)) {
    PyErr_SetString(PyExc_TypeError,
                    "a non-integer constant cannot be interpreted as an integer");
    return nullptr;
  }
  if (store().is_concrete(x)) { // as int(float('inf')) does
    PyErr_SetString(PyExc_OverflowError,
                    "cannot convert an infinite or NaN value to integer");
    return nullptr;
  }
  return symbolic_error("a Python integer");
}

// int(): a constant truncated toward zero, as int(2.5) is.
PyObject *term_int(PyObject *a) {
  TermId x = reinterpret_cast<TermObject *>(a)->id;
  if (!store().is_const(x))
    return term_index(a); // inf, NaN: OverflowError; symbolic: not followed
  const mpq_class &v = store().const_value(x);
  mpz_class truncated;
  mpz_tdiv_q(truncated.get_mpz_t(), v.get_num_mpz_t(), v.get_den_mpz_t());
  return python_int(truncated);
}

// binary() for a comparison, which with an infinity or NaN needs a
// collective's result linked (finite_or_linked).
template <typename Fn> PyObject *comparison(PyObject *a, PyObject *b, Fn fn) {
  auto x = to_term(a);
  auto y = x ? to_term(b) : std::nullopt;
  if (!x || !y) {
    if (PyErr_Occurred())
      return nullptr;
    Py_RETURN_NOTIMPLEMENTED;
  }
  if (!finite_or_linked(*x, *y, "a comparison with an infinity or NaN"))
    return nullptr;
  return wrap_checked(fn(*x, *y), "a comparison");
}

PyObject *term_richcompare(PyObject *a, PyObject *b, int op) {
  PyObject *result = nullptr;
  switch (op) {
  case Py_LT:
    result = comparison(a, b, [](TermId x, TermId y) { return store().lt(x, y); });
    break;
  case Py_LE:
    result = comparison(a, b, [](TermId x, TermId y) { return store().le(x, y); });
    break;
  case Py_GT:
    result = comparison(a, b, [](TermId x, TermId y) { return store().lt(y, x); });
    break;
  case Py_GE:
    result = comparison(a, b, [](TermId x, TermId y) { return store().le(y, x); });
    break;
  default:
    Py_RETURN_NOTIMPLEMENTED; // == and != keep object identity
  }
  return result;
}

Py_hash_t term_hash(PyObject *a) {
  return static_cast<Py_hash_t>(reinterpret_cast<TermObject *>(a)->id) + 1;
}

PyObject *term_repr(PyObject *a) {
  std::string text = store().to_string(reinterpret_cast<TermObject *>(a)->id, 200);
  return PyUnicode_FromString(text.c_str());
}

PyObject *term_get_id(PyObject *a, void *) {
  return PyLong_FromUnsignedLong(reinterpret_cast<TermObject *>(a)->id);
}
// Concrete values, -inf and NaN included: what Python may read as a float.
PyObject *term_get_is_const(PyObject *a, void *) {
  return PyBool_FromLong(store().is_concrete(reinterpret_cast<TermObject *>(a)->id));
}

// Outside the reals and outside what shardproof models (an Unmodelled
// extended value): no predicate of it may be decided.
PyObject *term_get_is_unmodelled(PyObject *a, void *) {
  return PyBool_FromLong(store().is_unmodelled(reinterpret_cast<TermObject *>(a)->id));
}

PyNumberMethods term_number = [] {
  PyNumberMethods m{};
  m.nb_add = in_trace<term_add>;
  m.nb_subtract = in_trace<term_sub>;
  m.nb_multiply = in_trace<term_mul>;
  m.nb_true_divide = in_trace<term_div>;
  m.nb_negative = in_trace<term_neg>;
  m.nb_positive = in_trace<term_pos>;
  m.nb_absolute = in_trace<term_abs>;
  m.nb_power = in_trace<term_pow>;
  m.nb_bool = in_trace<term_bool>;
  m.nb_float = in_trace<term_float>;
  m.nb_index = in_trace<term_index>;
  m.nb_int = in_trace<term_int>;
  return m;
}();

PyGetSetDef term_getset[] = {
    {"id", term_get_id, nullptr, nullptr, nullptr},
    {"is_const", in_trace<term_get_is_const>, nullptr, nullptr, nullptr},
    {"is_unmodelled", in_trace<term_get_is_unmodelled>, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject TermType = [] {
  PyTypeObject t{};
  t.ob_base.ob_base.ob_refcnt = 1; // what PyVarObject_HEAD_INIT sets
  t.tp_name = "_shardproof.Term";
  t.tp_basicsize = sizeof(TermObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "A symbolic real: one element of a symbolic tensor.";
  t.tp_as_number = &term_number;
  t.tp_richcompare = in_trace<term_richcompare>;
  t.tp_hash = term_hash;
  t.tp_repr = in_trace<term_repr>;
  t.tp_getset = term_getset;
  return t;
}();

// ---- symbolic Python numbers --------------------------------------------
// What `.item()` and float() of a symbolic element give: a Term that behaves
// as a Python float would. Arithmetic with Python numbers stays a number,
// arithmetic with a tensor element is an element; == and != decide on the
// path's witness as < does (an element's == keeps object identity, which
// numpy relies on); C code that needs its double stops the trace.

extern PyTypeObject SymbolicFloatType;

bool is_symbolic_float(PyObject *o) { return Py_IS_TYPE(o, &SymbolicFloatType); }
bool is_element(PyObject *o) { return is_term(o) && !is_symbolic_float(o); }

// A plain Term result, re-made as a number: the operands were numbers.
PyObject *as_symbolic_float(PyObject *result) {
  if (!result || !Py_IS_TYPE(result, &TermType))
    return result;
  auto *obj = PyObject_New(TermObject, &SymbolicFloatType);
  if (obj)
    obj->id = reinterpret_cast<TermObject *>(result)->id;
  Py_DECREF(result);
  return reinterpret_cast<PyObject *>(obj);
}

// The result of a binary operation: a number unless an operand is an element.
PyObject *of_operands(PyObject *a, PyObject *b, PyObject *result) {
  return is_element(a) || is_element(b) ? result : as_symbolic_float(result);
}
template <PyObject *(*Fn)(PyObject *, PyObject *)>
PyObject *float_binary(PyObject *a, PyObject *b) {
  return of_operands(a, b, Fn(a, b));
}
template <PyObject *(*Fn)(PyObject *)> PyObject *float_unary(PyObject *a) {
  return as_symbolic_float(Fn(a));
}
PyObject *float_pow(PyObject *a, PyObject *b, PyObject *mod) {
  return of_operands(a, b, term_pow(a, b, mod));
}

// x == y: neither x < y nor y < x, each decided on the witness; NaN equals
// nothing.
PyObject *float_richcompare(PyObject *a, PyObject *b, int op) {
  if ((op != Py_EQ && op != Py_NE) || is_element(a) || is_element(b))
    return term_richcompare(a, b, op);
  auto x = to_term(a), y = to_term(b);
  if (!x || !y) {
    if (PyErr_Occurred())
      return nullptr;
    Py_RETURN_NOTIMPLEMENTED;
  }
  auto is_nan = [](TermId t) {
    return store().is_extended(t) && store().extended_value(t) == terms::Extended::NaN;
  };
  bool equal = !is_nan(*x) && !is_nan(*y);
  if (!finite_or_linked(*x, *y, "a comparison with an infinity or NaN"))
    return nullptr;
  if (equal && *x == *y && !store().is_concrete(*x)) {
    // x == x is false for NaN: known of a collective's result once linked.
    TermId roots[] = {*x};
    if (auto missing = unlinked(roots); !missing.empty())
      return unlinked_error("a comparison of a value with itself", missing.front());
  }
  if (equal && *x != *y) {
    for (auto [lhs, rhs] : {std::pair{*x, *y}, std::pair{*y, *x}}) {
      TermId less = store().lt(lhs, rhs);
      if (store().is_unmodelled(less))
        return unmodelled_error("a comparison");
      int holds = decide(less);
      if (holds < 0)
        return nullptr;
      if (holds) {
        equal = false;
        break;
      }
    }
  }
  return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

// Formatting a number (a log line) shows its expression, whatever the spec.
PyObject *float_format(PyObject *a, PyObject *) { return term_repr(a); }

PyMethodDef float_methods[] = {
    {"__format__", in_trace<float_format>, METH_VARARGS, "the expression, as text"},
    {nullptr, nullptr, 0, nullptr},
};

PyNumberMethods float_number = [] {
  PyNumberMethods m = term_number;
  m.nb_add = in_trace<float_binary<term_add>>;
  m.nb_subtract = in_trace<float_binary<term_sub>>;
  m.nb_multiply = in_trace<float_binary<term_mul>>;
  m.nb_true_divide = in_trace<float_binary<term_div>>;
  m.nb_negative = in_trace<float_unary<term_neg>>;
  m.nb_absolute = in_trace<float_unary<term_abs>>;
  m.nb_power = in_trace<float_pow>;
  return m;
}();

PyTypeObject SymbolicFloatType = [] {
  PyTypeObject t{};
  t.ob_base.ob_base.ob_refcnt = 1;
  t.tp_name = "_shardproof.SymbolicFloat";
  t.tp_basicsize = sizeof(TermObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "A symbolic real as a Python float: what .item() and float() of a "
             "symbolic element give.";
  t.tp_base = &TermType;
  t.tp_as_number = &float_number;
  t.tp_richcompare = in_trace<float_richcompare>;
  t.tp_hash = term_hash;
  t.tp_methods = float_methods;
  return t;
}();

PyObject *py_number(PyObject *, PyObject *args) {
  PyObject *term;
  if (!PyArg_ParseTuple(args, "O!", &TermType, &term))
    return nullptr;
  Py_INCREF(term);
  return as_symbolic_float(term);
}

// A number put into a tensor is an element again.
PyObject *py_element(PyObject *, PyObject *args) {
  PyObject *term;
  if (!PyArg_ParseTuple(args, "O!", &TermType, &term))
    return nullptr;
  return wrap(reinterpret_cast<TermObject *>(term)->id);
}

// float(x) in Python code: of a symbolic value it is that value as a SymbolicFloat
// (DeepSpeed's `float(total_norm)` of a norm tensor), not a C double; a type
// answers for its own values through `__shardproof_float__` (the stand-in's
// Tensor). Everything else, and a value outside the modelled reals, goes to
// Python's own float(). C code that reads a double (math.sqrt, numpy) still
// goes through nb_float, which stops the trace.
vectorcallfunc g_python_float = nullptr;

PyObject *symbolic_float(PyObject *type, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames) {
  PyObject *x = PyVectorcall_NARGS(nargsf) == 1 && !kwnames ? args[0] : nullptr;
  if (!g_context || type != reinterpret_cast<PyObject *>(&PyFloat_Type) || !x ||
      PyFloat_Check(x) || PyLong_Check(x) || PyUnicode_Check(x))
    return g_python_float(type, args, nargsf, kwnames);
  if (is_term(x)) {
    TermId t = reinterpret_cast<TermObject *>(x)->id;
    if (store().is_concrete(t) || store().is_unmodelled(t))
      return g_python_float(type, args, nargsf, kwnames);
    Py_INCREF(x);
    return as_symbolic_float(x);
  }
  PyObject *hook = PyObject_GetAttrString(reinterpret_cast<PyObject *>(Py_TYPE(x)),
                                          "__shardproof_float__");
  if (!hook) {
    PyErr_Clear();
    return g_python_float(type, args, nargsf, kwnames);
  }
  PyObject *result = PyObject_CallOneArg(hook, x);
  Py_DECREF(hook);
  return result;
}

void install_symbolic_float() {
  if (!g_python_float) {
    g_python_float = PyFloat_Type.tp_vectorcall;
    PyFloat_Type.tp_vectorcall = symbolic_float;
  }
}

// ---- module functions --------------------------------------------------

std::optional<TermId> arg_term(PyObject *o) {
  auto t = to_term(o);
  if (!t && !PyErr_Occurred())
    PyErr_Format(PyExc_TypeError, "shardproof: %s is not a number", Py_TYPE(o)->tp_name);
  return t;
}

PyObject *new_var(PyObject *args, terms::VarKind kind) {
  const char *name, *origin = "";
  if (!PyArg_ParseTuple(args, "s|s", &name, &origin))
    return nullptr;
  return wrap(store().var(name, kind, origin));
}

PyObject *py_var(PyObject *, PyObject *args) {
  return new_var(args, g_context->leaf_kind);
}
PyObject *py_provably_positive(PyObject *, PyObject *args) {
  PyObject *x;
  if (!PyArg_ParseTuple(args, "O", &x))
    return nullptr;
  auto t = arg_term(x);
  if (!t)
    return nullptr;
  return PyBool_FromLong(terms::provably_positive(store(), *t));
}

// Uninitialised memory (torch.empty in the running code): any value at all,
// never the reference's, so it is quantified like an input of its own.
PyObject *py_uninitialised(PyObject *, PyObject *args) {
  return new_var(args, terms::VarKind::Reference);
}
PyObject *py_placeholder(PyObject *, PyObject *args) {
  return new_var(args, terms::VarKind::Placeholder);
}
PyObject *py_opaque(PyObject *, PyObject *args) {
  return new_var(args, terms::VarKind::Opaque);
}

PyObject *py_rename(PyObject *, PyObject *args) {
  PyObject *term;
  const char *name;
  if (!PyArg_ParseTuple(args, "O!s", &TermType, &term, &name))
    return nullptr;
  TermId id = reinterpret_cast<TermObject *>(term)->id;
  if (store().is_var(id))
    store().variable(id).name = name;
  Py_RETURN_NONE;
}

PyObject *py_apply(PyObject *, PyObject *args) {
  const char *name;
  PyObject *x;
  if (!PyArg_ParseTuple(args, "sO", &name, &x))
    return nullptr;
  terms::Fn fn;
  if (!terms::fn_from_name(name, fn)) {
    PyErr_Format(PyExc_ValueError, "shardproof: unknown function '%s'", name);
    return nullptr;
  }
  if (!is_term(x)) { // a concrete number stays concrete
    double v = PyFloat_AsDouble(x);
    if (v == -1.0 && PyErr_Occurred())
      return nullptr;
    if (std::isfinite(v))
      return PyFloat_FromDouble(terms::fn_eval(fn, v));
    // -inf, inf, NaN: only the limits PyTorch's kernels reach
    TermId limit = store().app(fn, store().constant_from_double(v));
    if (store().is_unmodelled(limit))
      return unmodelled_error(name);
    return PyFloat_FromDouble(concrete_double(limit));
  }
  TermId t = reinterpret_cast<TermObject *>(x)->id;
  if (store().is_const(t))
    return PyFloat_FromDouble(terms::fn_eval(fn, store().const_value(t).get_d()));
  return wrap_checked(store().app(fn, t), name);
}

// A number as an exact constant term (a float: its exact binary value), so
// the arithmetic that follows is over the rationals, as a symbolic value's is.
PyObject *py_exact(PyObject *, PyObject *args) {
  PyObject *x;
  if (!PyArg_ParseTuple(args, "O", &x))
    return nullptr;
  auto t = arg_term(x);
  return t ? wrap(*t) : nullptr;
}

PyObject *py_where(PyObject *, PyObject *args) {
  PyObject *c, *a, *b;
  if (!PyArg_ParseTuple(args, "OOO", &c, &a, &b))
    return nullptr;
  auto tc = arg_term(c), ta = tc ? arg_term(a) : std::nullopt,
       tb = ta ? arg_term(b) : std::nullopt;
  if (!tb)
    return nullptr;
  return wrap_checked(store().ite(*tc, *ta, *tb), "where() on a symbolic condition");
}

template <bool IsMax> PyObject *py_lattice(PyObject *, PyObject *args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO", &a, &b))
    return nullptr;
  auto x = arg_term(a), y = x ? arg_term(b) : std::nullopt;
  if (!y)
    return nullptr;
  return wrap_checked(IsMax ? store().max(*x, *y) : store().min(*x, *y), "a maximum");
}

std::vector<TermId> term_list(PyObject *seq) {
  std::vector<TermId> out;
  PyObject *fast = PySequence_Fast(seq, "shardproof: expected a list of elements");
  if (!fast)
    return out;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    auto t = arg_term(PySequence_Fast_GET_ITEM(fast, i));
    if (!t)
      break;
    out.push_back(*t);
  }
  Py_DECREF(fast);
  return out;
}

template <typename T> std::vector<T> int_list(PyObject *seq) {
  std::vector<T> out;
  PyObject *fast = PySequence_Fast(seq, "shardproof: expected a sequence of ints");
  if (!fast)
    return out;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i)
    out.push_back(static_cast<T>(PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i))));
  Py_DECREF(fast);
  return out;
}

ir::Trace &trace() { return *g_context->trace; }

// witness(terms) -> [float] at the path's witness, or None (no path, or a
// term reads a collective's result or an unmodelled value).
PyObject *py_witness(PyObject *, PyObject *args) {
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "O", &seq))
    return nullptr;
  std::vector<TermId> roots = term_list(seq);
  if (PyErr_Occurred())
    return nullptr;
  auto values = witness_values(roots);
  if (!values) {
    unlinked(roots); // what the next pass is to give
    Py_RETURN_NONE;
  }
  PyObject *out = PyList_New(static_cast<Py_ssize_t>(values->size()));
  for (std::size_t i = 0; out && i < values->size(); ++i)
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), PyFloat_FromDouble((*values)[i]));
  return out;
}

// unlinked(terms) -> None, or "NAME from FILE:LINE" of a collective's result
// the terms read that this run holds as a placeholder (every one is recorded
// as needed by the next tracing pass): what cannot yet be asked whether it
// is finite.
PyObject *py_unlinked(PyObject *, PyObject *args) {
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "O", &seq))
    return nullptr;
  std::vector<TermId> roots = term_list(seq);
  if (PyErr_Occurred())
    return nullptr;
  auto missing = unlinked(roots);
  if (missing.empty())
    Py_RETURN_NONE;
  const terms::Variable &v = store().variable(missing.front());
  return PyUnicode_FromFormat("%s from %s", v.name.c_str(), v.origin.c_str());
}

// assume(conditions, holds, what, file, line): decisions made at the witness.
PyObject *py_assume(PyObject *, PyObject *args) {
  PyObject *conditions, *holds;
  const char *what, *file;
  int line;
  if (!PyArg_ParseTuple(args, "OOssi", &conditions, &holds, &what, &file, &line))
    return nullptr;
  std::vector<TermId> terms_list = term_list(conditions);
  std::vector<long> truth = int_list<long>(holds);
  if (PyErr_Occurred())
    return nullptr;
  if (terms_list.size() != truth.size()) {
    PyErr_SetString(PyExc_ValueError,
                    "shardproof: assume() needs one truth per condition");
    return nullptr;
  }
  for (std::size_t i = 0; i < terms_list.size(); ++i) {
    if (store().is_concrete(terms_list[i]))
      continue; // decided for every input
    if (!store().is_bool(terms_list[i])) {
      PyErr_SetString(PyExc_TypeError, "shardproof: assume() of a non-boolean term");
      return nullptr;
    }
    record_decision(terms_list[i], truth[i] != 0, {file, line, 0, ""}, what);
  }
  Py_RETURN_NONE;
}

PyObject *py_record_node(PyObject *, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"op",       "category", "file",  "line",
                                   "column",   "function", "shape", "dtype",
                                   "elements", "parents",  nullptr};
  const char *op, *category, *file, *function, *dtype;
  int line, column;
  PyObject *shape, *elems, *inputs;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "sssiisOsOO", const_cast<char **>(keywords), &op, &category,
          &file, &line, &column, &function, &shape, &dtype, &elems, &inputs))
    return nullptr;
  auto known_category = ir::category_from_name(category);
  if (!known_category) {
    PyErr_Format(PyExc_ValueError, "shardproof: unknown op category %s (CATEGORIES)",
                 category);
    return nullptr;
  }
  ir::Node node;
  node.op = op;
  node.category = *known_category;
  node.loc = {file, line, column, function};
  node.shape = int_list<std::int64_t>(shape);
  node.dtype = ir::dtype_from_name(dtype);
  node.elements = term_list(elems);
  node.inputs = int_list<ir::NodeId>(inputs);
  if (PyErr_Occurred())
    return nullptr;
  return PyLong_FromUnsignedLong(trace().add_node(std::move(node)));
}

// A rank's leaf element is valued at the witness as the reference element
// the linker binds it to (a slice of an input the entry created whole, a
// shard of a parameter): ranks deciding from values equal to the reference's
// then decide as it does, whatever the names the rank's run gave them.
void name_for_witness_as_reference(const ir::Leaf &leaf) {
  if (!g_context->reference)
    return;
  const ir::LeafCounterpart counterpart = ir::counterpart_in(*g_context->reference, leaf);
  for (std::size_t i = 0; counterpart.positions && i < leaf.elements.size(); ++i) {
    // The reference's variables are valued by their own names.
    TermId held = counterpart.reference->elements[(*counterpart.positions)[i]];
    if (store().is_var(held))
      trace().witness_names[leaf.elements[i]] = store().variable(held).name;
  }
}

PyObject *py_record_leaf(PyObject *, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {
      "role",  "name",   "shape", "elements", "partition_dim", "partition_stride",
      "shard", "shards", "file",  "line",     nullptr};
  const char *role, *name, *file;
  PyObject *shape, *elems;
  int partition_dim, stride, shard_index, shard_count, line;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "ssOOiiiisi", const_cast<char **>(keywords), &role, &name, &shape,
          &elems, &partition_dim, &stride, &shard_index, &shard_count, &file, &line))
    return nullptr;
  ir::Leaf leaf;
  leaf.role =
      std::string(role) == "param" ? ir::LeafRole::Parameter : ir::LeafRole::Input;
  leaf.name = name;
  leaf.shape = int_list<std::int64_t>(shape);
  leaf.elements = term_list(elems);
  leaf.partition_dim = partition_dim;
  leaf.partition_stride = stride;
  leaf.shard_index = shard_index;
  leaf.shard_count = shard_count;
  leaf.loc = {file, line, 0, ""};
  if (PyErr_Occurred())
    return nullptr;
  name_for_witness_as_reference(leaf);
  trace().leaves.push_back(std::move(leaf));
  Py_RETURN_NONE;
}

// [(node, shape, elements), ...] -> values; false with a Python error set.
bool module_values(PyObject *list, std::vector<ir::ModuleCall::Value> &out) {
  if (!PyList_Check(list)) {
    PyErr_SetString(PyExc_TypeError, "shardproof: module values must be a list");
    return false;
  }
  for (Py_ssize_t i = 0; i < PyList_Size(list); ++i) {
    unsigned node;
    PyObject *shape, *elems;
    if (!PyArg_ParseTuple(PyList_GetItem(list, i), "IOO", &node, &shape, &elems))
      return false;
    out.push_back({node, int_list<std::int64_t>(shape), term_list(elems)});
    if (PyErr_Occurred())
      return false;
  }
  return true;
}

PyObject *py_record_module_call(PyObject *, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"name",   "type_name", "file", "line",
                                   "inputs", "outputs",   nullptr};
  const char *name, *type_name, *file;
  int line;
  PyObject *inputs, *outputs;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sssiOO", const_cast<char **>(keywords),
                                   &name, &type_name, &file, &line, &inputs, &outputs))
    return nullptr;
  ir::ModuleCall call;
  call.name = name;
  call.type_name = type_name;
  call.loc = {file, line, 0, ""};
  if (!module_values(inputs, call.inputs) || !module_values(outputs, call.outputs))
    return nullptr;
  call.output_gradients.resize(call.outputs.size());
  trace().module_calls.push_back(std::move(call));
  return PyLong_FromSize_t(trace().module_calls.size() - 1);
}

PyObject *py_record_module_gradient(PyObject *, PyObject *args) {
  unsigned long call;
  unsigned k, node;
  PyObject *elems;
  if (!PyArg_ParseTuple(args, "kIIO", &call, &k, &node, &elems))
    return nullptr;
  auto &calls = trace().module_calls;
  if (call >= calls.size() || k >= calls[call].outputs.size()) {
    PyErr_SetString(PyExc_IndexError, "shardproof: no such module output");
    return nullptr;
  }
  auto &value = calls[call].output_gradients[k];
  value = {node, calls[call].outputs[k].shape, term_list(elems)};
  if (PyErr_Occurred())
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_record_parallel_group(PyObject *, PyObject *args) {
  const char *axis;
  PyObject *ranks;
  if (!PyArg_ParseTuple(args, "sO", &axis, &ranks))
    return nullptr;
  std::string_view name = axis;
  if (name != "tensor_parallel" && name != "data_parallel") {
    PyErr_Format(PyExc_ValueError, "unknown parallel axis '%s'", axis);
    return nullptr;
  }
  (name == "tensor_parallel" ? trace().tensor_parallel_group
                             : trace().data_parallel_group) = int_list<int>(ranks);
  if (PyErr_Occurred())
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_record_collective(PyObject *, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {
      "kind",          "op",          "group",        "sequence",
      "src",           "input_shape", "output_shape", "dtype",
      "inputs",        "outputs",     "file",         "line",
      "column",        "function",    "node",         "input_splits",
      "output_splits", "blocking",    nullptr};
  const char *kind, *op, *dtype, *file, *function;
  PyObject *group, *in_shape, *out_shape, *inputs, *outputs;
  PyObject *input_splits = nullptr, *output_splits = nullptr;
  int sequence, src, line, column, blocking = 0;
  unsigned node;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ssOiiOOsOOsiisI|OOp",
                                   const_cast<char **>(keywords), &kind, &op, &group,
                                   &sequence, &src, &in_shape, &out_shape, &dtype,
                                   &inputs, &outputs, &file, &line, &column, &function,
                                   &node, &input_splits, &output_splits, &blocking))
    return nullptr;
  ir::Collective c;
  auto k = ir::collective_from_name(kind);
  auto r = ir::reduce_op_from_name(op);
  if (!k || !r) {
    PyErr_Format(PyExc_ValueError, "shardproof: unknown collective %s/%s", kind, op);
    return nullptr;
  }
  c.kind = *k;
  c.op = *r;
  c.group = int_list<int>(group);
  c.sequence = sequence;
  c.src = src;
  c.input_shape = int_list<std::int64_t>(in_shape);
  c.output_shape = int_list<std::int64_t>(out_shape);
  c.dtype = ir::dtype_from_name(dtype);
  c.inputs = term_list(inputs);
  c.outputs = term_list(outputs);
  if (input_splits && output_splits) {
    c.input_splits = int_list<std::int64_t>(input_splits);
    c.output_splits = int_list<std::int64_t>(output_splits);
  }
  c.blocking = blocking != 0;
  c.loc = {file, line, column, function};
  c.node = node;
  if (PyErr_Occurred())
    return nullptr;
  trace().collectives.push_back(std::move(c));
  return PyLong_FromSize_t(trace().collectives.size() - 1);
}

// Whether this run may guess the result of a call (group, sequence), and if
// so that it does (ir::Trace::guessed): False for a call an earlier pass
// guessed without linking confirming it.
PyObject *py_record_guess(PyObject *, PyObject *args) {
  PyObject *group;
  int sequence;
  if (!PyArg_ParseTuple(args, "Oi", &group, &sequence))
    return nullptr;
  auto key = ir::known_collective_key(int_list<int>(group), sequence, false);
  if (PyErr_Occurred())
    return nullptr;
  if (g_context->not_guessed && g_context->not_guessed->contains(key))
    Py_RETURN_FALSE;
  trace().guessed.insert(std::move(key));
  Py_RETURN_TRUE;
}

// The first wait() on the Work of an isend or irecv (the call's index).
PyObject *py_record_wait(PyObject *, PyObject *args) {
  Py_ssize_t index;
  if (!PyArg_ParseTuple(args, "n", &index))
    return nullptr;
  auto &calls = trace().collectives;
  if (index >= 0 && static_cast<std::size_t>(index) < calls.size() &&
      calls[static_cast<std::size_t>(index)].waited < 0)
    calls[static_cast<std::size_t>(index)].waited = static_cast<int>(calls.size());
  Py_RETURN_NONE;
}

PyObject *py_known_collective(PyObject *, PyObject *args) {
  PyObject *group;
  int sequence, message = 0;
  if (!PyArg_ParseTuple(args, "Oi|p", &group, &sequence, &message))
    return nullptr;
  auto key = ir::known_collective_key(int_list<int>(group), sequence, message != 0);
  if (PyErr_Occurred())
    return nullptr;
  const ir::KnownCollectives *known = g_context->known_collectives;
  auto it = known ? known->find(key) : ir::KnownCollectives::const_iterator{};
  if (!known || it == known->end())
    Py_RETURN_NONE;
  PyObject *list = PyList_New(static_cast<Py_ssize_t>(it->second.size()));
  for (std::size_t i = 0; list && i < it->second.size(); ++i)
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), wrap(it->second[i]));
  return list;
}

PyObject *py_record_output(PyObject *, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"path", "node",    "shape", "dtype", "elements",
                                   "role", "subject", "owned", nullptr};
  const char *path, *dtype, *role, *subject;
  unsigned node;
  PyObject *shape, *elems, *owned = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sIOsOss|O",
                                   const_cast<char **>(keywords), &path, &node, &shape,
                                   &dtype, &elems, &role, &subject, &owned))
    return nullptr;
  ir::Output out;
  std::string_view r = role;
  out.role = r == "param-grad"   ? ir::Output::Role::ParameterGrad
             : r == "input-grad" ? ir::Output::Role::InputGrad
             : r == "param-step" ? ir::Output::Role::ParameterAfterStep
             : r == "grad-norm"  ? ir::Output::Role::GradientNorm
                                 : ir::Output::Role::Forward;
  out.subject = subject;
  out.path = path;
  out.node = node;
  out.shape = int_list<std::int64_t>(shape);
  out.dtype = ir::dtype_from_name(dtype);
  out.elements = term_list(elems);
  if (owned) { // flat: start, end, start, end, ...
    auto bounds = int_list<std::size_t>(owned);
    out.owned.emplace();
    for (std::size_t k = 0; k + 1 < bounds.size(); k += 2)
      out.owned->push_back({bounds[k], bounds[k + 1]});
  }
  if (PyErr_Occurred())
    return nullptr;
  trace().outputs.push_back(std::move(out));
  Py_RETURN_NONE;
}

// evaluate(terms, vars, values): the terms' values in doubles, with the real
// meaning of every function, the vars set to the values and all others to 0.
PyObject *py_evaluate(PyObject *, PyObject *args) {
  PyObject *terms_list, *vars_list, *values_list;
  if (!PyArg_ParseTuple(args, "OOO", &terms_list, &vars_list, &values_list))
    return nullptr;
  std::vector<TermId> targets = term_list(terms_list), vars = term_list(vars_list);
  if (PyErr_Occurred())
    return nullptr;
  PyObject *fast = PySequence_Fast(values_list, "shardproof: expected values");
  if (!fast)
    return nullptr;
  std::unordered_map<TermId, double> assignment;
  for (Py_ssize_t i = 0;
       i < PySequence_Fast_GET_SIZE(fast) && i < static_cast<Py_ssize_t>(vars.size());
       ++i)
    assignment[vars[i]] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
  Py_DECREF(fast);
  terms::DoubleEvaluator eval(store(), [&](TermId v) {
    auto it = assignment.find(v);
    return it == assignment.end() ? 0.0 : it->second;
  });
  PyObject *out = PyList_New(static_cast<Py_ssize_t>(targets.size()));
  for (std::size_t i = 0; i < targets.size(); ++i)
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i),
                    PyFloat_FromDouble(eval(targets[i]).value_or(NAN)));
  return out;
}

PyObject *py_take_symbolic_stops(PyObject *, PyObject *) {
  long n = g_symbolic_stops;
  g_symbolic_stops = 0;
  return PyLong_FromLong(n);
}

PyObject *string_list(const std::vector<std::string> &items) {
  PyObject *list = PyList_New(static_cast<Py_ssize_t>(items.size()));
  for (std::size_t i = 0; i < items.size(); ++i)
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i),
                    PyUnicode_FromString(items[i].c_str()));
  return list;
}

// A Python sequence of str as strings; false with a Python error set.
bool strings_of(PyObject *sequence, std::vector<std::string> &out) {
  PyObject *items = PySequence_Fast(sequence, "expected a sequence of str");
  if (!items)
    return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); ++i) {
    const char *item = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(items, i));
    if (!item) {
      Py_DECREF(items);
      return false;
    }
    out.emplace_back(item);
  }
  Py_DECREF(items);
  return true;
}

// The callers of the extensions loaded in this process, by the handle
// extension_module gives Python.
std::vector<ExtensionCaller> &extension_callers() {
  static std::vector<ExtensionCaller> callers;
  return callers;
}

// extension_module(name, sources, flags) -> None when building an extension is not
// modelled, else (functions, error, handle): each function (name, bound C++
// function, registered_at, kernels, undefined), error a string or None, and
// the handle extension_call takes (None: calls are not modelled).
PyObject *py_extension_module(PyObject *, PyObject *args) {
  const char *name = nullptr;
  PyObject *sources = nullptr, *flags = nullptr;
  if (!PyArg_ParseTuple(args, "sOO", &name, &sources, &flags))
    return nullptr;
  if (!g_context->extensions)
    Py_RETURN_NONE;
  std::vector<std::string> paths, flag_words;
  if (!strings_of(sources, paths) || !strings_of(flags, flag_words))
    return nullptr;
  ExtensionModule module;
  try {
    module = (*g_context->extensions)(name, paths, flag_words);
  } catch (const std::exception &e) {
    module.error = e.what();
  }
  PyObject *functions = PyList_New(0);
  for (const ExtensionFunctionInfo &fn : module.functions) {
    PyObject *entry = Py_BuildValue("(ssNNN)", fn.name.c_str(), fn.function.c_str(),
                                    PyUnicode_FromString(fn.registered_at.str().c_str()),
                                    string_list(fn.kernels), string_list(fn.undefined));
    PyList_Append(functions, entry);
    Py_DECREF(entry);
  }
  if (module.error)
    return Py_BuildValue("(NsO)", functions, module.error->c_str(), Py_None);
  if (!module.call)
    return Py_BuildValue("(NOO)", functions, Py_None, Py_None);
  extension_callers().push_back(module.call);
  return Py_BuildValue("(NOn)", functions, Py_None,
                       static_cast<Py_ssize_t>(extension_callers().size() - 1));
}

// One argument of extension_call: None, an int, a float, a bool, or a
// tensor as (dtype name, shape, elements); false with a Python error set.
bool extension_value(PyObject *o, ExtensionValue &out) {
  if (o == Py_None) {
    out = std::monostate{};
  } else if (PyBool_Check(o)) {
    out = o == Py_True;
  } else if (PyLong_Check(o)) {
    out = static_cast<std::int64_t>(PyLong_AsLongLong(o));
  } else if (PyFloat_Check(o)) {
    out = PyFloat_AsDouble(o);
  } else if (PyList_Check(o)) { // sizes
    std::vector<std::int64_t> sizes;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(o); ++k)
      sizes.push_back(PyLong_AsLongLong(PyList_GET_ITEM(o, k)));
    out = std::move(sizes);
  } else {
    const char *dtype = nullptr;
    PyObject *shape = nullptr, *elements = nullptr;
    if (!PyArg_ParseTuple(o, "sOO", &dtype, &shape, &elements))
      return false;
    ExtensionTensor tensor;
    tensor.dtype = ir::dtype_from_name(dtype);
    PyObject *sizes = PySequence_Fast(shape, "a shape");
    PyObject *items = sizes ? PySequence_Fast(elements, "elements") : nullptr;
    if (!items) {
      Py_XDECREF(sizes);
      return false;
    }
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(sizes); ++k)
      tensor.shape.push_back(PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sizes, k)));
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(items); ++k) {
      auto t = arg_term(PySequence_Fast_GET_ITEM(items, k));
      if (!t)
        break;
      tensor.elements.push_back(*t);
    }
    Py_DECREF(sizes);
    Py_DECREF(items);
    if (PyErr_Occurred())
      return false;
    out = std::move(tensor);
  }
  return !PyErr_Occurred();
}

PyObject *term_list(const std::vector<TermId> &terms) {
  PyObject *list = PyList_New(static_cast<Py_ssize_t>(terms.size()));
  for (std::size_t k = 0; k < terms.size(); ++k)
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), wrap(terms[k]));
  return list;
}

// extension_call(handle, function, args) -> ("rejected", message),
// ("unsupported", why) or ("ok", returned, returns_none, sequence, written,
// returned_arguments, number): returned a list of (dtype, shape, elements),
// sequence "list", "tuple" or "" (one tensor), written a dict of argument
// index -> elements,
// returned_arguments the argument each returned tensor is (-1: a new one),
// number what a function returning an int, float or bool returned.
PyObject *py_extension_call(PyObject *, PyObject *args) {
  Py_ssize_t handle = 0;
  const char *function = nullptr;
  PyObject *values = nullptr;
  if (!PyArg_ParseTuple(args, "nsO", &handle, &function, &values))
    return nullptr;
  if (handle < 0 || handle >= static_cast<Py_ssize_t>(extension_callers().size())) {
    PyErr_SetString(PyExc_ValueError, "shardproof: no such extension");
    return nullptr;
  }
  PyObject *items = PySequence_Fast(values, "arguments");
  if (!items)
    return nullptr;
  std::vector<ExtensionValue> call_args(PySequence_Fast_GET_SIZE(items));
  for (std::size_t k = 0; k < call_args.size(); ++k)
    if (!extension_value(PySequence_Fast_GET_ITEM(items, k), call_args[k])) {
      Py_DECREF(items);
      return nullptr;
    }
  Py_DECREF(items);
  ExtensionCallResult result;
  try {
    result = extension_callers()[handle](function, call_args, store());
  } catch (const std::exception &e) {
    result.unsupported = e.what();
  }
  if (result.rejected)
    return Py_BuildValue("(ss)", "rejected", result.rejected->c_str());
  if (result.unsupported)
    return Py_BuildValue("(ss)", "unsupported", result.unsupported->c_str());
  PyObject *returned = PyList_New(0);
  for (const ExtensionTensor &tensor : result.returned) {
    PyObject *shape = PyTuple_New(static_cast<Py_ssize_t>(tensor.shape.size()));
    for (std::size_t k = 0; k < tensor.shape.size(); ++k)
      PyTuple_SET_ITEM(shape, static_cast<Py_ssize_t>(k),
                       PyLong_FromLongLong(tensor.shape[k]));
    std::string dtype(ir::dtype_name(tensor.dtype));
    PyObject *entry =
        Py_BuildValue("(sNN)", dtype.c_str(), shape, term_list(tensor.elements));
    if (!entry) {
      Py_DECREF(returned);
      return nullptr;
    }
    PyList_Append(returned, entry);
    Py_DECREF(entry);
  }
  PyObject *written = PyDict_New();
  for (const auto &[index, elements] : result.written) {
    PyObject *key = PyLong_FromSize_t(index), *value = term_list(elements);
    PyDict_SetItem(written, key, value);
    Py_DECREF(key);
    Py_DECREF(value);
  }
  PyObject *arguments = PyList_New(0);
  for (int index : result.returned_arguments) {
    PyObject *item = PyLong_FromLong(index);
    PyList_Append(arguments, item);
    Py_DECREF(item);
  }
  PyObject *number = Py_None;
  if (result.returned_number) {
    if (const auto *i = std::get_if<std::int64_t>(&*result.returned_number))
      number = PyLong_FromLongLong(*i);
    else if (const auto *d = std::get_if<double>(&*result.returned_number))
      number = PyFloat_FromDouble(*d);
    else if (const auto *b = std::get_if<bool>(&*result.returned_number))
      number = PyBool_FromLong(*b);
  }
  if (number == Py_None)
    Py_INCREF(Py_None);
  const char *sequence = result.returns_tuple      ? "tuple"
                         : result.returns_sequence ? "list"
                                                   : "";
  return Py_BuildValue("(sNNsNNN)", "ok", returned, PyBool_FromLong(result.returns_none),
                       sequence, written, arguments, number);
}

PyMethodDef module_methods[] = {
    {"extension_module", in_trace<py_extension_module>, METH_VARARGS,
     "extension_module(name, sources, flags): the functions load() builds, or None"},
    {"extension_call", in_trace<py_extension_call>, METH_VARARGS,
     "extension_call(handle, function, args): the kernels' values, or why not"},
    {"take_symbolic_stops", py_take_symbolic_stops, METH_NOARGS,
     "take_symbolic_stops() -> stops at symbolic control flow since the last call"},
    {"witness", in_trace<py_witness>, METH_VARARGS,
     "witness(terms): their values at the path's witness, or None"},
    {"unlinked", in_trace<py_unlinked>, METH_VARARGS,
     "unlinked(terms): a collective's result they read that is not linked yet, or "
     "None"},
    {"assume", in_trace<py_assume>, METH_VARARGS,
     "assume(conditions, holds, what, file, line): decisions made at the witness"},
    {"evaluate", in_trace<py_evaluate>, METH_VARARGS,
     "evaluate(terms, vars, values) -> floats"},
    {"var", in_trace<py_var>, METH_VARARGS,
     "var(name, origin) -> a fresh symbolic leaf element"},
    {"provably_positive", in_trace<py_provably_positive>, METH_VARARGS,
     "provably_positive(x) -> True where x > 0 for every value of its variables"},
    {"uninitialised", in_trace<py_uninitialised>, METH_VARARGS,
     "uninitialised(name, origin) -> an element of uninitialised memory: any value"},
    {"placeholder", in_trace<py_placeholder>, METH_VARARGS,
     "a collective result, resolved at link time"},
    {"opaque", in_trace<py_opaque>, METH_VARARGS, "a value shardproof does not model"},
    {"rename", in_trace<py_rename>, METH_VARARGS,
     "rename(term, name): the name reports use"},
    {"apply", in_trace<py_apply>, METH_VARARGS, "apply(fn, x): a nonlinear function"},
    {"where", in_trace<py_where>, METH_VARARGS, "where(cond, a, b)"},
    {"number", py_number, METH_VARARGS, "number(term): the term as a Python number"},
    {"element", py_element, METH_VARARGS, "element(term): the term as a tensor element"},
    {"exact", in_trace<py_exact>, METH_VARARGS, "exact(x): x as an exact constant term"},
    {"maximum", in_trace<py_lattice<true>>, METH_VARARGS, "maximum(a, b)"},
    {"minimum", in_trace<py_lattice<false>>, METH_VARARGS, "minimum(a, b)"},
    {"record_node", with_keywords(in_trace<py_record_node>), METH_VARARGS | METH_KEYWORDS,
     "record one IR node"},
    {"record_leaf", with_keywords(in_trace<py_record_leaf>), METH_VARARGS | METH_KEYWORDS,
     "record a parameter or input"},
    {"record_module_call", with_keywords(in_trace<py_record_module_call>),
     METH_VARARGS | METH_KEYWORDS,
     "record a module's inputs and outputs; returns the call's index"},
    {"record_module_gradient", in_trace<py_record_module_gradient>, METH_VARARGS,
     "record the gradient a module's output received"},
    {"record_parallel_group", in_trace<py_record_parallel_group>, METH_VARARGS,
     "record the entry's tensor- or data-parallel group (axis, global ranks)"},
    {"record_collective", with_keywords(in_trace<py_record_collective>),
     METH_VARARGS | METH_KEYWORDS, "record a collective call; returns its index"},
    {"record_guess", in_trace<py_record_guess>, METH_VARARGS,
     "guess the result of a call (group, sequence) (False: not this call's, this run)"},
    {"record_wait", in_trace<py_record_wait>, METH_VARARGS,
     "record the wait() on an isend's or irecv's Work (the call's index)"},
    {"known_collective", in_trace<py_known_collective>, METH_VARARGS,
     "the constants an earlier pass linked a collective (group, sequence) to, or None"},
    {"record_output", with_keywords(in_trace<py_record_output>),
     METH_VARARGS | METH_KEYWORDS, "record an entry output"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_shardproof",
    "shardproof's term engine and IR recorder",
    -1,
    module_methods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};
} // namespace

void set_recording_context(RecordingContext *context) { g_context = context; }

PyObject *trace_timeout_error() { return g_timeout_error; }

namespace {
PyObject *name_tuple(const std::vector<std::string_view> &names) {
  PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(names.size()));
  for (std::size_t i = 0; i < names.size(); ++i)
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i),
                     PyUnicode_FromStringAndSize(
                         names[i].data(), static_cast<Py_ssize_t>(names[i].size())));
  return tuple;
}
} // namespace

PyObject *init_shardproof_module() {
  if (PyType_Ready(&TermType) < 0 || PyType_Ready(&SymbolicFloatType) < 0)
    return nullptr;
  install_symbolic_float();
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return nullptr;
  Py_INCREF(&TermType);
  PyModule_AddObject(m, "Term", reinterpret_cast<PyObject *>(&TermType));
  Py_INCREF(&SymbolicFloatType);
  PyModule_AddObject(m, "SymbolicFloat",
                     reinterpret_cast<PyObject *>(&SymbolicFloatType));
  // A BaseException, so user code's `except Exception` cannot swallow it.
  g_symbolic_error =
      PyErr_NewException("_shardproof.SymbolicControlFlow", PyExc_BaseException, nullptr);
  Py_INCREF(g_symbolic_error);
  PyModule_AddObject(m, "SymbolicControlFlow", g_symbolic_error);
  g_unmodelled_error =
      PyErr_NewException("_shardproof.UnmodelledValue", g_symbolic_error, nullptr);
  Py_INCREF(g_unmodelled_error);
  PyModule_AddObject(m, "UnmodelledValue", g_unmodelled_error);
  // A BaseException, so user code's `except Exception` cannot swallow it.
  g_timeout_error =
      PyErr_NewException("_shardproof.TraceTimeout", PyExc_BaseException, nullptr);
  Py_INCREF(g_timeout_error);
  PyModule_AddObject(m, "TraceTimeout", g_timeout_error);
  // The IR's enumerations, by name: the recorders accept no other.
  PyModule_AddObject(m, "DTYPES", name_tuple(ir::dtype_names()));
  PyModule_AddObject(m, "CATEGORIES", name_tuple(ir::category_names()));
  PyModule_AddObject(m, "COLLECTIVES", name_tuple(ir::collective_names()));
  PyModule_AddObject(m, "REDUCE_OPS", name_tuple(ir::reduce_op_names()));
  return m;
}

} // namespace shardproof::frontend
