#include "models/terms/term_store.h"

#include <algorithm>

#include <cmath>
#include <stdexcept>
#include <unordered_set>

namespace shardproof::terms {

namespace {
struct FnInfo {
  Fn fn;
  std::string_view name;
};
constexpr FnInfo kFunctions[] = {
    {Fn::Gelu, "gelu"},
    {Fn::GeluTanh, "gelu_tanh"},
    {Fn::Tanh, "tanh"},
    {Fn::Exp, "exp"},
    {Fn::Log, "log"},
    {Fn::Erf, "erf"},
    {Fn::Sqrt, "sqrt"},
    {Fn::Rsqrt, "rsqrt"},
    {Fn::Sigmoid, "sigmoid"},
    {Fn::Silu, "silu"},
    {Fn::Relu, "relu"},
    {Fn::Sin, "sin"},
    {Fn::Cos, "cos"},
    {Fn::GeluGrad, "gelu_grad"},
    {Fn::GeluTanhGrad, "gelu_tanh_grad"},
};

std::size_t mix(std::size_t seed, std::size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}
} // namespace

std::string_view fn_name(Fn fn) {
  for (const auto &info : kFunctions)
    if (info.fn == fn)
      return info.name;
  return "?";
}

bool fn_from_name(std::string_view name, Fn &out) {
  for (const auto &info : kFunctions)
    if (info.name == name) {
      out = info.fn;
      return true;
    }
  return false;
}

namespace {
// One definition for both precisions: the falsifier's doubles and the long
// doubles that estimate their rounding error.
template <typename T> T fn_eval_in(Fn fn, T x) {
  const T pi = static_cast<T>(3.14159265358979323846264338327950288L);
  const T two = 2;
  switch (fn) {
  case Fn::Gelu:
    return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(two)));
  case Fn::GeluTanh:
    return T(0.5) * x *
           (T(1) + std::tanh(std::sqrt(two / pi) * (x + T(0.044715) * x * x * x)));
  case Fn::Tanh:
    return std::tanh(x);
  case Fn::Exp:
    return std::exp(x);
  case Fn::Log:
    return std::log(x);
  case Fn::Erf:
    return std::erf(x);
  case Fn::Sqrt:
    return std::sqrt(x);
  case Fn::Rsqrt:
    return T(1) / std::sqrt(x);
  case Fn::Sigmoid:
    return T(1) / (T(1) + std::exp(-x));
  case Fn::Silu:
    return x / (T(1) + std::exp(-x));
  case Fn::Relu:
    return x > 0 ? x : T(0);
  case Fn::Sin:
    return std::sin(x);
  case Fn::Cos:
    return std::cos(x);
  case Fn::GeluGrad: // Phi(x) + x phi(x)
    return T(0.5) * (T(1) + std::erf(x / std::sqrt(two))) +
           x * std::exp(-T(0.5) * x * x) / std::sqrt(two * pi);
  case Fn::GeluTanhGrad: {
    const T k = std::sqrt(two / pi);
    T inner = k * (x + T(0.044715) * x * x * x);
    T t = std::tanh(inner);
    return T(0.5) * (T(1) + t) +
           T(0.5) * x * (T(1) - t * t) * k * (T(1) + 3 * T(0.044715) * x * x);
  }
  }
  return static_cast<T>(NAN);
}
} // namespace

double fn_eval(Fn fn, double x) { return fn_eval_in(fn, x); }
long double fn_eval(Fn fn, long double x) { return fn_eval_in(fn, x); }

std::size_t TermStore::NodeHash::operator()(const Node &n) const {
  std::size_t h = mix(static_cast<std::size_t>(n.op), n.payload);
  for (TermId a : n.args)
    h = mix(h, a);
  return h;
}

TermStore::TermStore() {
  zero_ = constant(mpq_class(0));
  one_ = constant(mpq_class(1));
}

TermId TermStore::intern(Node node) {
  auto it = index_.find(node);
  if (it != index_.end())
    return it->second;
  TermId id = static_cast<TermId>(nodes_.size());
  nodes_.push_back(node);
  index_.emplace(std::move(node), id);
  return id;
}

TermId TermStore::constant(const mpq_class &given) {
  mpq_class value = given;
  value.canonicalize(); // mpq_class(a, b) does not, and 2/2 must be 1
  std::string key = value.get_str();
  auto it = constant_index_.find(key);
  std::uint32_t index;
  if (it != constant_index_.end()) {
    index = it->second;
  } else {
    index = static_cast<std::uint32_t>(constants_.size());
    constants_.push_back(value);
    constant_index_.emplace(std::move(key), index);
  }
  return intern(Node{Op::Const, index, {}});
}

TermId TermStore::constant_from_double(double value) {
  if (std::isnan(value))
    return extended(Extended::NaN);
  if (std::isinf(value))
    return extended(value < 0 ? Extended::NegInf : Extended::PosInf);
  return constant(mpq_class(value));
}

TermId TermStore::extended(Extended value) {
  return intern(Node{Op::Ext, static_cast<std::uint32_t>(value), {}});
}

namespace {
Extended flip(Extended e) {
  return e == Extended::NegInf   ? Extended::PosInf
         : e == Extended::PosInf ? Extended::NegInf
                                 : e;
}
// An infinity as a double; any finite real compares with it like 0 does.
double as_double(Extended e) {
  switch (e) {
  case Extended::NegInf:
    return -INFINITY;
  case Extended::PosInf:
    return INFINITY;
  default:
    return NAN;
  }
}
} // namespace

// NaN and Unmodelled absorb (NaN as IEEE says, Unmodelled first so that
// nothing undecided is ever hidden by a NaN); opposite infinities make NaN;
// an infinity plus any real is that infinity.
std::optional<TermId> TermStore::extended_add(TermId a, TermId b) {
  if (!is_extended(a) && !is_extended(b))
    return std::nullopt;
  if (is_unmodelled(a) || is_unmodelled(b))
    return extended(Extended::Unmodelled);
  if (!is_extended(a))
    return b;
  if (!is_extended(b))
    return a;
  Extended x = extended_value(a), y = extended_value(b);
  if (x == Extended::NaN || y == Extended::NaN || x != y)
    return extended(Extended::NaN);
  return a;
}

// An infinity times a real is decided only for a concrete real: its sign
// gives the infinity's, and 0 * inf is NaN. A symbolic factor may be 0 or of
// either sign: Unmodelled.
std::optional<TermId> TermStore::extended_mul(TermId a, TermId b) {
  if (!is_extended(a) && !is_extended(b))
    return std::nullopt;
  if (is_unmodelled(a) || is_unmodelled(b))
    return extended(Extended::Unmodelled);
  if (!is_extended(a))
    std::swap(a, b); // a is extended
  Extended x = extended_value(a);
  if (x == Extended::NaN || (is_extended(b) && extended_value(b) == Extended::NaN))
    return extended(Extended::NaN);
  if (is_extended(b))
    return extended(extended_value(b) == Extended::NegInf ? flip(x) : x);
  if (!is_const(b))
    return extended(Extended::Unmodelled);
  int sign = sgn(const_value(b));
  if (sign == 0)
    return extended(Extended::NaN);
  return extended(sign > 0 ? x : flip(x));
}

// Comparisons with NaN are false; a finite real lies strictly between the
// infinities whatever its value.
std::optional<TermId> TermStore::extended_compare(bool strict, TermId a, TermId b) {
  if (!is_extended(a) && !is_extended(b))
    return std::nullopt;
  if (is_unmodelled(a) || is_unmodelled(b))
    return extended(Extended::Unmodelled);
  double x = is_extended(a) ? as_double(extended_value(a)) : 0.0;
  double y = is_extended(b) ? as_double(extended_value(b)) : 0.0;
  return (strict ? x < y : x <= y) ? one_ : zero_;
}

// torch.maximum and torch.max propagate NaN; -inf is max's unit, +inf its
// absorbing element (the reverse for min).
std::optional<TermId> TermStore::extended_lattice(bool is_max, TermId a, TermId b) {
  if (!is_extended(a) && !is_extended(b))
    return std::nullopt;
  if (is_unmodelled(a) || is_unmodelled(b))
    return extended(Extended::Unmodelled);
  if ((is_extended(a) && extended_value(a) == Extended::NaN) ||
      (is_extended(b) && extended_value(b) == Extended::NaN))
    return extended(Extended::NaN);
  Extended unit = is_max ? Extended::NegInf : Extended::PosInf;
  if (is_extended(a) && extended_value(a) == unit)
    return b;
  if (is_extended(b) && extended_value(b) == unit)
    return a;
  return is_extended(a) ? a : b; // the absorbing infinity
}

std::optional<TermId> TermStore::extended_app(Fn fn, TermId arg) {
  if (!is_extended(arg))
    return std::nullopt;
  Extended x = extended_value(arg);
  if (x == Extended::Unmodelled || x == Extended::NaN)
    return arg;
  bool negative = x == Extended::NegInf;
  auto ext = [&](Extended e) { return extended(e); };
  // Only functions whose limits PyTorch's kernels reach exactly; the rest
  // (gelu(-inf) is -inf * 0 in some kernels) stay unmodelled.
  switch (fn) {
  case Fn::Exp:
    return negative ? zero_ : ext(Extended::PosInf);
  case Fn::Log:
  case Fn::Sqrt:
    return negative ? ext(Extended::NaN) : ext(Extended::PosInf);
  case Fn::Rsqrt:
    return negative ? ext(Extended::NaN) : zero_;
  case Fn::Tanh:
  case Fn::Erf:
    return negative ? constant(-1) : one_;
  case Fn::Sigmoid:
    return negative ? zero_ : one_;
  case Fn::Relu:
    return negative ? zero_ : arg;
  default:
    return ext(Extended::Unmodelled);
  }
}

TermId TermStore::var(std::string name, VarKind kind, std::string origin) {
  auto index = static_cast<std::uint32_t>(variables_.size());
  variables_.push_back(Variable{std::move(name), kind, std::move(origin)});
  // Variables are never shared: the index makes each node distinct.
  return intern(Node{Op::Var, index, {}});
}

const mpq_class &TermStore::const_value(TermId id) const {
  return constants_[nodes_[id].payload];
}

const Variable &TermStore::variable(TermId id) const {
  return variables_[nodes_[id].payload];
}
Variable &TermStore::variable(TermId id) { return variables_[nodes_[id].payload]; }

bool TermStore::is_bool(TermId id) const {
  Op op = nodes_[id].op;
  return op == Op::Lt || op == Op::Le;
}

TermId TermStore::add(TermId a, TermId b) {
  if (auto e = extended_add(a, b))
    return *e;
  if (is_const(a) && is_const(b))
    return constant(const_value(a) + const_value(b));
  if (a == zero_)
    return b;
  if (b == zero_)
    return a;
  return intern(Node{Op::Add, 0, {a, b}});
}

TermId TermStore::add(std::span<const TermId> args) {
  if (args.empty())
    return zero_;
  if (args.size() == 1)
    return args[0];
  return intern(Node{Op::Add, 0, {args.begin(), args.end()}});
}

TermId TermStore::mul(TermId a, TermId b) {
  if (auto e = extended_mul(a, b))
    return *e;
  // sqrt(x) * sqrt(x) = x where x >= 0 (a norm squared back to its sum of
  // squares); where x < 0 both sides differ (sqrt gives NaN), so not then.
  if (a == b && nodes_[a].op == Op::App &&
      static_cast<Fn>(nodes_[a].payload) == Fn::Sqrt &&
      provably_nonnegative(*this, nodes_[a].args[0]))
    return nodes_[a].args[0];
  if (is_const(a) && is_const(b))
    return constant(const_value(a) * const_value(b));
  if (a == zero_ || b == zero_)
    return zero_;
  if (a == one_)
    return b;
  if (b == one_)
    return a;
  return intern(Node{Op::Mul, 0, {a, b}});
}

TermId TermStore::mul(std::span<const TermId> args) {
  if (args.empty())
    return one_;
  if (args.size() == 1)
    return args[0];
  return intern(Node{Op::Mul, 0, {args.begin(), args.end()}});
}

TermId TermStore::neg(TermId a) { return mul(constant(-1), a); }
TermId TermStore::sub(TermId a, TermId b) { return add(a, neg(b)); }

TermId TermStore::inv(TermId a) {
  if (is_extended(a)) // 1/inf = 0; NaN and Unmodelled stay
    return infinite_value(a) ? zero_ : a;
  if (is_const(a)) {
    const mpq_class &v = const_value(a);
    return v == 0 ? zero_ : constant(mpq_class(1) / v);
  }
  if (nodes_[a].op == Op::Inv)
    return nodes_[a].args[0];
  return intern(Node{Op::Inv, 0, {a}});
}

TermId TermStore::div(TermId a, TermId b) { return mul(a, inv(b)); }

TermId TermStore::app(Fn fn, TermId arg) {
  if (auto e = extended_app(fn, arg))
    return *e;
  return intern(Node{Op::App, static_cast<std::uint32_t>(fn), {arg}});
}

TermId TermStore::lt(TermId a, TermId b) {
  if (auto e = extended_compare(true, a, b))
    return *e;
  if (is_const(a) && is_const(b))
    return const_value(a) < const_value(b) ? one_ : zero_;
  return intern(Node{Op::Lt, 0, {a, b}});
}

TermId TermStore::le(TermId a, TermId b) {
  if (auto e = extended_compare(false, a, b))
    return *e;
  if (is_const(a) && is_const(b))
    return const_value(a) <= const_value(b) ? one_ : zero_;
  return intern(Node{Op::Le, 0, {a, b}});
}

TermId TermStore::ite(TermId cond, TermId then_term, TermId else_term) {
  if (is_unmodelled(cond))
    return cond;
  if (is_extended(cond)) // +-inf and NaN are true, as bool(nan) is
    return then_term;
  if (is_const(cond))
    return const_value(cond) != 0 ? then_term : else_term;
  if (then_term == else_term)
    return then_term;
  // A symbolic choice of an extended value would put it inside arithmetic.
  if (is_extended(then_term) || is_extended(else_term))
    return extended(Extended::Unmodelled);
  return intern(Node{Op::Ite, 0, {cond, then_term, else_term}});
}

TermId TermStore::max(TermId a, TermId b) {
  if (auto e = extended_lattice(true, a, b))
    return *e;
  if (a == b)
    return a;
  if (is_const(a) && is_const(b))
    return const_value(a) < const_value(b) ? b : a;
  return intern(Node{Op::Max, 0, {a, b}});
}

TermId TermStore::min(TermId a, TermId b) {
  if (auto e = extended_lattice(false, a, b))
    return *e;
  if (a == b)
    return a;
  if (is_const(a) && is_const(b))
    return const_value(b) < const_value(a) ? b : a;
  return intern(Node{Op::Min, 0, {a, b}});
}

TermId TermStore::lattice(Op op, std::span<const TermId> args) {
  if (args.size() == 1)
    return args[0];
  return intern(Node{op, 0, {args.begin(), args.end()}});
}

std::string TermStore::to_string(TermId id, std::size_t limit) const {
  std::string out;
  append_text(id, out, limit);
  if (out.size() > limit)
    out = out.substr(0, limit) + "...";
  return out;
}

// Stops unfolding once `out` passes `limit`: a DAG's text is a tree, which
// can be exponentially larger.
void TermStore::append_text(TermId id, std::string &out, std::size_t limit) const {
  if (out.size() > limit)
    return;
  const Node &n = nodes_[id];
  auto join = [&](std::string_view sep) {
    out += "(";
    for (std::size_t i = 0; i < n.args.size() && out.size() <= limit; ++i) {
      if (i)
        out += sep;
      append_text(n.args[i], out, limit);
    }
    out += ")";
  };
  switch (n.op) {
  case Op::Const:
    out += const_value(id).get_str();
    return;
  case Op::Var:
    out += variable(id).name;
    return;
  case Op::Add:
    return join(" + ");
  case Op::Mul:
    return join("*");
  case Op::Inv:
    out += "1/";
    return append_text(n.args[0], out, limit);
  case Op::App:
    out += fn_name(static_cast<Fn>(n.payload));
    out += "(";
    append_text(n.args[0], out, limit);
    out += ")";
    return;
  case Op::Lt:
    return join(" < ");
  case Op::Le:
    return join(" <= ");
  case Op::Ite:
    out += "ite";
    return join(", ");
  case Op::Max:
    out += "max";
    return join(", ");
  case Op::Min:
    out += "min";
    return join(", ");
  case Op::Ext:
    switch (extended_value(id)) {
    case Extended::NegInf:
      out += "-inf";
      return;
    case Extended::PosInf:
      out += "inf";
      return;
    case Extended::NaN:
      out += "nan";
      return;
    case Extended::Unmodelled:
      out += "unmodelled";
      return;
    }
  }
  out += "?";
}

TermId Substitution::apply(TermId term) {
  if (auto it = memo_.find(term); it != memo_.end())
    return it->second;
  if (auto b = binding_.find(term); b != binding_.end())
    return memo_[term] = b->second;
  const Node node = store_.node(term); // copy: the store may grow below
  TermId result = term;
  switch (node.op) {
  case Op::Const:
  case Op::Ext:
    break;
  case Op::Var:
    if (resolver_)
      result = resolver_(term);
    break;
  case Op::Add:
  case Op::Mul: {
    bool is_add = node.op == Op::Add;
    result = is_add ? store_.zero() : store_.one();
    for (TermId arg : node.args) {
      TermId a = apply(arg);
      result = is_add ? store_.add(result, a) : store_.mul(result, a);
    }
    break;
  }
  case Op::Inv:
    result = store_.inv(apply(node.args[0]));
    break;
  case Op::App:
    result = store_.app(static_cast<Fn>(node.payload), apply(node.args[0]));
    break;
  case Op::Lt:
    result = store_.lt(apply(node.args[0]), apply(node.args[1]));
    break;
  case Op::Le:
    result = store_.le(apply(node.args[0]), apply(node.args[1]));
    break;
  case Op::Ite:
    result = store_.ite(apply(node.args[0]), apply(node.args[1]), apply(node.args[2]));
    break;
  case Op::Max:
  case Op::Min: {
    result = apply(node.args[0]);
    for (std::size_t i = 1; i < node.args.size(); ++i)
      result = node.op == Op::Max ? store_.max(result, apply(node.args[i]))
                                  : store_.min(result, apply(node.args[i]));
    break;
  }
  }
  memo_[term] = result;
  return result;
}

namespace {
// Post-order over the DAG; each node gets a local number in first-visit
// order, so that the key is linear in the DAG's size (never the size of the
// tree it unfolds to) and independent of the store's ids. `label` spells a
// variable.
template <typename Label>
std::string dag_key(const TermStore &store, std::span<const TermId> roots, Label label) {
  std::unordered_map<TermId, std::size_t> local;
  std::string key;
  std::vector<std::pair<TermId, bool>> stack;
  for (TermId root : roots) {
    stack.push_back({root, false});
    while (!stack.empty()) {
      auto [t, expanded] = stack.back();
      stack.pop_back();
      if (local.count(t))
        continue;
      const Node &n = store.node(t);
      if (!expanded) {
        stack.push_back({t, true});
        for (auto it = n.args.rbegin(); it != n.args.rend(); ++it)
          if (!local.count(*it))
            stack.push_back({*it, false});
        continue;
      }
      key += std::to_string(static_cast<int>(n.op));
      if (n.op == Op::Var)
        key += "v" + std::to_string(static_cast<int>(store.variable(t).kind)) + "." +
               label(t);
      else if (n.op == Op::Const)
        key += "c" + store.const_value(t).get_str();
      else
        key += "p" + std::to_string(n.payload);
      for (TermId a : n.args)
        key += "," + std::to_string(local.at(a));
      key += ";";
      local.emplace(t, local.size());
    }
    key += "|" + std::to_string(local.at(root)) + "|";
  }
  return key;
}
} // namespace

std::string alpha_key(const TermStore &store, std::span<const TermId> roots) {
  // Each variable is its first-seen ordinal: only the shape and constants show.
  std::size_t variables = 0;
  return dag_key(store, roots, [&](TermId) { return std::to_string(variables++); });
}

std::string named_key(const TermStore &store, std::span<const TermId> roots) {
  return dag_key(store, roots, [&](TermId v) { return store.variable(v).name; });
}

std::vector<TermId> variables_of(const TermStore &store, std::span<const TermId> roots) {
  std::vector<TermId> out;
  std::unordered_set<TermId> seen;
  std::vector<TermId> stack(roots.rbegin(), roots.rend());
  while (!stack.empty()) {
    TermId t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second)
      continue;
    const Node &n = store.node(t);
    if (n.op == Op::Var)
      out.push_back(t);
    for (auto it = n.args.rbegin(); it != n.args.rend(); ++it)
      stack.push_back(*it);
  }
  return out;
}

bool provably_positive(const TermStore &store, TermId t,
                       std::unordered_map<TermId, bool> *memo) {
  if (memo)
    if (auto it = memo->find(t); it != memo->end())
      return it->second;
  const Node &n = store.node(t);
  bool result = false;
  switch (n.op) {
  case Op::Const:
    result = store.const_value(t) > 0;
    break;
  case Op::App:
    result = static_cast<Fn>(n.payload) == Fn::Exp ||
             static_cast<Fn>(n.payload) == Fn::Sigmoid;
    break;
  case Op::Add:
  case Op::Mul:
  case Op::Inv:
    result = std::all_of(n.args.begin(), n.args.end(),
                         [&](TermId a) { return provably_positive(store, a, memo); });
    break;
  default:
    break;
  }
  if (memo)
    (*memo)[t] = result;
  return result;
}

namespace {
// A product is a square when each of its factors occurs an even number of
// times (x * x, x * y * x * y); its sign is then never negative.
bool is_square(const Node &n) {
  std::unordered_map<TermId, int> count;
  for (TermId a : n.args)
    ++count[a];
  return std::all_of(count.begin(), count.end(),
                     [](const auto &entry) { return entry.second % 2 == 0; });
}
} // namespace

namespace {
bool nonnegative(const TermStore &store, TermId t,
                 std::unordered_map<TermId, bool> &memo) {
  if (auto it = memo.find(t); it != memo.end())
    return it->second;
  const Node &n = store.node(t);
  auto holds = [&](TermId a) { return nonnegative(store, a, memo); };
  bool result = false;
  switch (n.op) {
  case Op::Const:
    result = store.const_value(t) >= 0;
    break;
  case Op::App:
    switch (static_cast<Fn>(n.payload)) {
    case Fn::Exp:
    case Fn::Sigmoid:
    case Fn::Relu:
      result = true;
      break;
    case Fn::Sqrt:
      result = holds(n.args[0]);
      break;
    default:
      break;
    }
    break;
  case Op::Mul:
    result = is_square(n) || std::all_of(n.args.begin(), n.args.end(), holds);
    break;
  case Op::Add:
  case Op::Inv:
    result = std::all_of(n.args.begin(), n.args.end(), holds);
    break;
  case Op::Max:
    result = std::any_of(n.args.begin(), n.args.end(), holds);
    break;
  default:
    break;
  }
  memo[t] = result;
  return result;
}
} // namespace

bool provably_nonnegative(const TermStore &store, TermId t) {
  std::unordered_map<TermId, bool> memo;
  return nonnegative(store, t, memo);
}

} // namespace shardproof::terms
