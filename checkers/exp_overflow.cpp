// SP010: an exp whose argument nothing bounds above reaches an output. The
// proofs hold over the reals, where exp(x) / sum(exp(x)) equals the shifted
// exp(x - max) / sum(exp(x - max)); in float16 and float32 only the shifted
// form survives large logits (exp overflows to inf, inf / inf is NaN). So the
// hazard is reported as its own finding, never hidden in a proof: per line,
// once, saying whether the single-device reference shifts where the
// distributed code does not.
#include "checkers/check_factories.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace shardproof::checkers {

namespace {
using terms::Fn;
using terms::Op;
using terms::TermId;

// Above this exp overflows float32 (log of its max is 88.72), and float16
// much earlier (11.09): a bound beyond it bounds nothing that matters.
constexpr double kLargestSafeExponent = 88.0;

struct Interval {
  double lo = -INFINITY, hi = INFINITY;
};

// Bounds that hold for every value of the variables, by interval rules and
// the one pattern softmax needs: s - max(..., s, ...) <= 0.
class Bounds {
public:
  explicit Bounds(const terms::TermStore &store) : store_(store) {}

  Interval operator()(TermId t) {
    if (auto it = memo_.find(t); it != memo_.end())
      return it->second;
    Interval result = compute(t);
    memo_.emplace(t, result);
    return result;
  }

private:
  // The arguments of a maximum, nested maxima flattened (an all-reduced max
  // of local maxima is one).
  std::set<TermId> maximum_of(TermId t) const {
    std::set<TermId> out;
    std::vector<TermId> todo{t};
    while (!todo.empty()) {
      TermId x = todo.back();
      todo.pop_back();
      const terms::Node &n = store_.node(x);
      if (n.op == Op::Max)
        todo.insert(todo.end(), n.args.begin(), n.args.end());
      else
        out.insert(x);
    }
    return out;
  }

  // s - max(M) <= 0 when s is one of M: an Add(s, Mul(-1, max(M))) node.
  bool shifted_by_its_max(const terms::Node &sum) const {
    if (sum.args.size() != 2)
      return false;
    for (int k = 0; k < 2; ++k) {
      const terms::Node &neg = store_.node(sum.args[k]);
      // A row with one element left is its own maximum: s - s.
      if (neg.op != Op::Mul || neg.args.size() != 2 || !store_.is_const(neg.args[0]) ||
          store_.const_value(neg.args[0]) != -1)
        continue;
      if (maximum_of(neg.args[1]).count(sum.args[1 - k]))
        return true;
    }
    return false;
  }

  static Interval product(Interval a, Interval b) {
    if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || !std::isfinite(b.lo) ||
        !std::isfinite(b.hi))
      return {};
    double p[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  }

  Interval compute(TermId t) {
    const terms::Node n = store_.node(t); // copy: memo_ may rehash
    switch (n.op) {
    case Op::Const: {
      double v = store_.const_value(t).get_d();
      return {v, v};
    }
    case Op::Var:
    case Op::Ext:
      return {};
    case Op::Add: {
      Interval sum{0, 0};
      for (TermId a : n.args) {
        Interval i = (*this)(a);
        sum.lo += i.lo, sum.hi += i.hi;
      }
      if (shifted_by_its_max(n))
        sum.hi = std::min(sum.hi, 0.0);
      return sum;
    }
    case Op::Mul: {
      // A constant times a square (every symbolic factor an even number of
      // times) has a sign; otherwise interval products of bounded factors.
      double coefficient = 1;
      std::map<TermId, int> factors;
      for (TermId a : n.args) {
        if (store_.is_const(a))
          coefficient *= store_.const_value(a).get_d();
        else
          ++factors[a];
      }
      bool square =
          !factors.empty() && std::all_of(factors.begin(), factors.end(),
                                          [](auto &f) { return f.second % 2 == 0; });
      Interval p{1, 1};
      for (const auto &[a, k] : factors)
        for (int i = 0; i < k; ++i)
          p = product(p, (*this)(a));
      if (square)
        p.lo = std::max(p.lo, 0.0);
      if (coefficient == 0)
        return {0, 0};
      if (coefficient > 0)
        return {coefficient * p.lo, coefficient * p.hi};
      return {coefficient * p.hi, coefficient * p.lo};
    }
    case Op::Inv: {
      Interval i = (*this)(n.args[0]);
      if (i.lo > 0 || i.hi < 0)
        return {1 / i.hi, 1 / i.lo};
      return {};
    }
    case Op::App:
      return function(static_cast<Fn>(n.payload), (*this)(n.args[0]));
    case Op::Lt:
    case Op::Le:
      return {0, 1};
    case Op::Ite: {
      Interval a = (*this)(n.args[1]), b = (*this)(n.args[2]);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case Op::Max:
    case Op::Min: {
      Interval out = (*this)(n.args[0]);
      for (std::size_t k = 1; k < n.args.size(); ++k) {
        Interval i = (*this)(n.args[k]);
        out = n.op == Op::Max ? Interval{std::max(out.lo, i.lo), std::max(out.hi, i.hi)}
                              : Interval{std::min(out.lo, i.lo), std::min(out.hi, i.hi)};
      }
      return out;
    }
    }
    return {};
  }

  static Interval function(Fn fn, Interval x) {
    switch (fn) {
    case Fn::Exp:
      return {std::exp(x.lo), std::exp(x.hi)};
    case Fn::Log:
      return {x.lo > 0 ? std::log(x.lo) : -INFINITY,
              x.hi > 0 ? std::log(x.hi) : INFINITY};
    case Fn::Tanh:
    case Fn::Erf:
    case Fn::Sin:
    case Fn::Cos:
      return {-1, 1};
    case Fn::Sigmoid:
      return {0, 1};
    case Fn::Relu:
      return {std::max(x.lo, 0.0), std::max(x.hi, 0.0)};
    case Fn::Sqrt:
      return {0, x.hi >= 0 ? std::sqrt(x.hi) : INFINITY};
    case Fn::Rsqrt:
      return {0, x.lo > 0 ? 1 / std::sqrt(x.lo) : INFINITY};
    case Fn::Gelu:
    case Fn::GeluTanh: // gelu(x) lies between -0.17 and max(x, 0)
      return {-0.2, std::max(x.hi, 0.0)};
    case Fn::Silu: // silu(x) lies between -0.28 and max(x, 0)
      return {-0.3, std::max(x.hi, 0.0)};
    case Fn::GeluGrad:
    case Fn::GeluTanhGrad:
      return {-0.2, 1.2};
    }
    return {};
  }

  const terms::TermStore &store_;
  std::unordered_map<TermId, Interval> memo_;
};

class ExpOverflowCheck : public Check {
public:
  std::string_view name() const override { return "exp-overflow"; }
  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {RuleCode::ExpOverflow};
    return kEmits;
  }

  void run(CheckContext &context) override {
    auto &program = context.program;
    Bounds bounds(context.store);
    std::vector<Run> runs{{&program.reference(), -1}};
    for (int r = 0; r < program.world(); ++r)
      runs.push_back({&program.rank(r), r});
    for (Run &run : runs)
      find_unbounded(context, bounds, run);

    // Where each exp was made: the node that holds it as an element and
    // did not get it from an input (its exp, or softmax's; not the casts,
    // copies and gathers it travels through after); else, for an exp inside a composite (logsumexp), the
    // first node reaching it that is no collective (another rank's exp only
    // travels through those).
    std::map<Key, Site> sites;
    std::unordered_set<TermId> placed;
    auto place = [&](const Run &run, const ir::Node &node, TermId exp) {
      placed.insert(exp);
      Site &site = sites[key(node.loc)];
      if (site.op.empty())
        site = {node.loc, node.op, run.unbounded.at(exp)};
      if (run.rank < 0)
        site.in_reference = true;
      else
        site.ranks.insert(run.rank);
    };
    for (const Run &run : runs)
      for (const ir::Node &node : run.trace->nodes)
        for (TermId t : made_here(context, run, node))
          place(run, node, t);
    for (const Run &run : runs)
      for (const auto &[exp, output] : run.unbounded) {
        if (placed.count(exp))
          continue;
        for (const ir::Node &node : run.trace->nodes) {
          if (node.category == ir::OpCategory::Collective)
            continue;
          std::unordered_set<TermId> seen;
          bool found = false;
          for (TermId e : node.elements)
            walk(context.store, linked(context, run, e), seen,
                 [&](TermId t) { found = found || t == exp; });
          if (found) {
            place(run, node, exp);
            break;
          }
        }
      }

    const bool reference_shifts = runs[0].unbounded.empty();
    for (const auto &[k, site] : sites) {
      std::string message =
          fmt::format("exp of a value that nothing bounds above ({}) reaches {}: in "
                      "float32 it overflows to inf past 88.7 and in float16 past 11.1, "
                      "and a softmax of inf is NaN; ",
                      site.op, site.output);
      if (reference_shifts)
        message += "the single-device reference shifts by the maximum (x - max(x)) and "
                   "the distributed code does not";
      else
        message += "shift by the maximum first (x - x.amax(dim, keepdim=True)), as "
                   "torch.softmax does; the proofs hold over the reals only";
      Finding f = Finding::of(RuleCode::ExpOverflow, site.loc, message);
      if (!site.ranks.empty())
        f.details.push_back(
            fmt::format("On rank{} {}{}", site.ranks.size() > 1 ? "s" : "",
                        fmt::join(site.ranks, ", "),
                        site.in_reference ? ", and in the reference" : ""));
      context.findings.push_back(std::move(f));
    }
  }

private:
  using Key = std::tuple<std::string, int, int>;
  struct Run {
    const ir::Trace *trace;
    int rank;                                          // -1: the reference
    std::unordered_map<TermId, std::string> unbounded; // exp term -> first output
  };
  struct Site {
    ir::SourceLoc loc;
    std::string op;
    std::string output;
    bool in_reference = false;
    std::set<int> ranks;
  };

  static Key key(const ir::SourceLoc &loc) { return {loc.file, loc.line, loc.column}; }

  // The run's unbounded exps that `node` makes: held as elements, held by
  // none of its inputs. Collectives and custom Functions make none (their
  // values come from other ranks, or from the ops their forward recorded).
  static std::vector<TermId> made_here(CheckContext &context, const Run &run,
                                       const ir::Node &node) {
    std::vector<TermId> held;
    if (node.category == ir::OpCategory::Collective || node.op.starts_with("custom:"))
      return held;
    for (TermId e : node.elements)
      if (TermId t = linked(context, run, e); run.unbounded.count(t))
        held.push_back(t);
    if (held.empty())
      return held;
    std::unordered_set<TermId> carried;
    for (ir::NodeId input : node.inputs)
      for (TermId e : run.trace->node(input).elements)
        carried.insert(linked(context, run, e));
    std::erase_if(held, [&](TermId t) { return carried.count(t) > 0; });
    return held;
  }

  static TermId linked(CheckContext &context, const Run &run, TermId t) {
    return run.rank < 0 ? t : context.program.linked(run.rank, t);
  }

  // The exps of unbounded values that the run's outputs depend on.
  static void find_unbounded(CheckContext &context, Bounds &bounds, Run &run) {
    auto &store = context.store;
    std::unordered_set<TermId> seen;
    for (const ir::Output &out : run.trace->outputs)
      for (TermId e : out.elements)
        walk(store, linked(context, run, e), seen, [&](TermId t) {
          const terms::Node &n = store.node(t);
          if (n.op == Op::App && static_cast<Fn>(n.payload) == Fn::Exp &&
              !(bounds(n.args[0]).hi <= kLargestSafeExponent))
            run.unbounded.emplace(t, fmt::format("'{}'", out.path));
        });
  }

  // Visits every term below `root` not yet in `seen`, once.
  template <typename Visit>
  static void walk(const terms::TermStore &store, TermId root,
                   std::unordered_set<TermId> &seen, Visit visit) {
    std::vector<TermId> todo{root};
    while (!todo.empty()) {
      TermId t = todo.back();
      todo.pop_back();
      if (!seen.insert(t).second)
        continue;
      visit(t);
      const auto &args = store.node(t).args;
      todo.insert(todo.end(), args.begin(), args.end());
    }
  }
};
} // namespace

std::unique_ptr<Check> make_exp_overflow_check() {
  return std::make_unique<ExpOverflowCheck>();
}

} // namespace shardproof::checkers
