#include "models/terms/evaluate.h"

#include <cmath>
#include <type_traits>

namespace shardproof::terms {

namespace {
double to_value(const mpq_class &q, double *) { return q.get_d(); }
long double to_value(const mpq_class &q, long double *) {
  // Rationals whose parts doubles hold exactly divide in long double; others
  // (rare: huge exact sums) are rounded to double first.
  auto exact = [](const mpz_class &z) { return mpz_sizeinbase(z.get_mpz_t(), 2) <= 53; };
  if (exact(q.get_num()) && exact(q.get_den()))
    return static_cast<long double>(q.get_num().get_d()) /
           static_cast<long double>(q.get_den().get_d());
  return static_cast<long double>(q.get_d());
}
mpq_class to_value(const mpq_class &q, mpq_class *) { return q; }

double extended_double(Extended e) {
  return e == Extended::NegInf ? -INFINITY : e == Extended::PosInf ? INFINITY : NAN;
}

std::optional<double> apply_fn(Fn fn, double x) { return fn_eval(fn, x); }
std::optional<long double> apply_fn(Fn fn, long double x) { return fn_eval(fn, x); }
std::optional<mpq_class> apply_fn(Fn fn, const mpq_class &x) {
  if (fn == Fn::Relu)
    return x > 0 ? x : mpq_class(0);
  return std::nullopt; // transcendental: no exact rational value
}
} // namespace

template <typename Value> std::optional<Value> Evaluator<Value>::operator()(TermId term) {
  if (auto it = memo_.find(term); it != memo_.end())
    return it->second;
  const Node &node = store_.node(term);
  std::optional<Value> result;
  std::vector<Value> args;
  for (TermId arg : node.args) {
    auto v = (*this)(arg);
    if (!v) {
      memo_[term] = std::nullopt;
      return std::nullopt;
    }
    args.push_back(*v);
  }
  switch (node.op) {
  case Op::Const:
    result = to_value(store_.const_value(term), static_cast<Value *>(nullptr));
    break;
  case Op::Ext:
    // Floating point holds the infinities and NaN; rationals do not, and
    // nothing holds an undecided value.
    if constexpr (std::is_floating_point_v<Value>)
      if (!store_.is_unmodelled(term))
        result = static_cast<Value>(extended_double(store_.extended_value(term)));
    break;
  case Op::Var:
    result = assignment_(term);
    if constexpr (std::is_same_v<Value, mpq_class>)
      result->canonicalize(); // GMP arithmetic needs canonical operands
    break;
  case Op::Add: {
    Value sum = 0;
    for (const Value &v : args)
      sum += v;
    result = sum;
    break;
  }
  case Op::Mul: {
    Value product = 1;
    for (const Value &v : args)
      product *= v;
    result = product;
    break;
  }
  case Op::Inv:
    result = args[0] == 0 ? Value(0) : Value(Value(1) / args[0]);
    break;
  case Op::App:
    result = apply_fn(static_cast<Fn>(node.payload), args[0]);
    break;
  case Op::Lt:
    result = Value(args[0] < args[1] ? 1 : 0);
    break;
  case Op::Le:
    result = Value(args[0] <= args[1] ? 1 : 0);
    break;
  case Op::Ite:
    result = args[0] != 0 ? args[1] : args[2];
    break;
  case Op::Max:
  case Op::Min: {
    Value best = args[0];
    for (const Value &v : args)
      if (node.op == Op::Max ? best < v : v < best)
        best = v;
    result = best;
    break;
  }
  }
  memo_[term] = result;
  return result;
}

template class Evaluator<double>;
template class Evaluator<long double>;
template class Evaluator<mpq_class>;

bool nearly_equal(double a, double b) {
  if (a == b) // the same infinity too, whose difference is NaN
    return true;
  if (!std::isfinite(a) || !std::isfinite(b))
    return std::isnan(a) && std::isnan(b);
  double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= 1e-7 * scale;
}

} // namespace shardproof::terms
