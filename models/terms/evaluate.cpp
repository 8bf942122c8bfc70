#include "models/terms/evaluate.h"

#include <cmath>
#include <type_traits>

namespace shardproof::terms {

namespace {
double to_value(const mpq_class &q, double *) { return q.get_d(); }
mpq_class to_value(const mpq_class &q, mpq_class *) { return q; }

std::optional<double> apply_fn(Fn fn, double x) { return fn_eval(fn, x); }
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
template class Evaluator<mpq_class>;

bool nearly_equal(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= 1e-7 * scale;
}

} // namespace shardproof::terms
