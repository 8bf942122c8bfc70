#include "checkers/forward_equivalence.h"

#include "models/terms/evaluate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace shardproof::checkers {

using terms::TermId;

namespace {
const ir::Output *find_output(const ir::Trace &trace, const std::string &path) {
  for (const ir::Output &o : trace.outputs)
    if (o.path == path)
      return &o;
  return nullptr;
}

// Nodes correspond across runs when the same source line produced them with
// the same op, the k-th time, and that line ran the op equally often in every
// run (x.chunk(world)[rank] does not: its pieces cannot be paired up).
using SiteKey = std::tuple<std::string, int, std::string>;
using NodeKey = std::tuple<std::string, int, std::string, int>;

struct NodeIndex {
  std::map<NodeKey, ir::NodeId> nodes;
  std::map<SiteKey, int> counts;
};

NodeIndex index_nodes(const ir::Trace &trace) {
  NodeIndex index;
  for (const ir::Node &n : trace.nodes) {
    int k = index.counts[{n.loc.file, n.loc.line, n.op}]++;
    index.nodes[{n.loc.file, n.loc.line, n.op, k}] = n.id;
  }
  return index;
}

bool is_symbolic(const terms::TermStore &store, const ir::Node &node) {
  return std::any_of(node.elements.begin(), node.elements.end(),
                     [&](TermId t) { return !store.is_const(t); });
}

std::string format_value(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.6g}", v);
}
} // namespace

std::optional<Divergence> locate_divergence(terms::TermStore &store,
                                            frontend::LinkedProgram &program,
                                            const std::string &output_path) {
  const ir::Trace &ref = program.reference();
  const int world = program.world();
  const ir::Output *out0 = find_output(program.rank(0), output_path);
  if (!out0)
    return std::nullopt;
  auto ref_index = index_nodes(ref);
  std::vector<NodeIndex> rank_index;
  for (int r = 0; r < world; ++r)
    rank_index.push_back(index_nodes(program.rank(r)));

  // Key of every rank-0 node, to find its twins.
  const ir::Trace &rank0 = program.rank(0);
  std::vector<NodeKey> keys(rank0.nodes.size());
  for (const auto &[key, id] : rank_index[0].nodes)
    keys[id] = key;
  auto pairable = [&](const NodeKey &key) {
    SiteKey site{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
    int n = ref_index.counts[site];
    return std::all_of(rank_index.begin(), rank_index.end(),
                       [&](NodeIndex &r) { return r.counts[site] == n; });
  };

  std::map<ir::NodeId, Layout> layouts; // symbolic ancestors with twins everywhere
  std::vector<ir::NodeId> stack{out0->node};
  std::set<ir::NodeId> visited;
  while (!stack.empty()) {
    ir::NodeId id = stack.back();
    stack.pop_back();
    if (id >= rank0.nodes.size() || !visited.insert(id).second)
      continue;
    const ir::Node &node = rank0.node(id);
    for (ir::NodeId in : node.inputs)
      stack.push_back(in);
    if (!is_symbolic(store, node))
      continue;
    auto ref_it = ref_index.nodes.find(keys[id]);
    if (ref_it == ref_index.nodes.end() || !pairable(keys[id]))
      continue;
    DistributedValue value;
    const ir::Node &ref_node = ref.node(ref_it->second);
    value.reference_shape = ref_node.shape;
    value.reference = ref_node.elements;
    bool twins = true;
    for (int r = 0; r < world && twins; ++r) {
      auto it = rank_index[r].nodes.find(keys[id]);
      twins = it != rank_index[r].nodes.end();
      if (!twins)
        break;
      const ir::Node &twin = program.rank(r).node(it->second);
      value.rank_shapes.push_back(twin.shape);
      value.ranks.push_back(program.linked(r, twin.elements));
    }
    if (twins)
      layouts[id] = infer_layout(store, value);
  }

  auto layout_of = [&](ir::NodeId id) -> const Layout * {
    auto it = layouts.find(id);
    return it == layouts.end() ? nullptr : &it->second;
  };
  auto bad = [&](ir::NodeId id) {
    const Layout *l = layout_of(id);
    return l && !l->acceptable();
  };
  auto partial = [&](ir::NodeId id) {
    const Layout *l = layout_of(id);
    return l && l->kind == Layout::Kind::PartialSum;
  };
  auto is_collective = [&](ir::NodeId id) {
    return rank0.node(id).category == ir::OpCategory::Collective;
  };
  auto result = [&](ir::NodeId id) {
    const ir::Node &n = rank0.node(id);
    return Divergence{n.loc, n.op, n.category, *layout_of(id)};
  };

  // 1. A partial sum that reaches the output without crossing a collective
  //    is a missing reduction: report where that partial value was made.
  std::set<ir::NodeId> unreduced;
  for (std::vector<ir::NodeId> todo{out0->node}; !todo.empty();) {
    ir::NodeId id = todo.back();
    todo.pop_back();
    if (!unreduced.insert(id).second || is_collective(id))
      continue; // a collective is where partial values are meant to end
    for (ir::NodeId in : rank0.node(id).inputs)
      todo.push_back(in);
  }
  std::optional<ir::NodeId> latest_partial;
  for (ir::NodeId id : unreduced)
    if (partial(id))
      latest_partial = id; // ids grow in execution order: keep the last
  if (latest_partial) {
    ir::NodeId origin = *latest_partial;
    for (bool moved = !is_collective(origin); moved;) {
      moved = false;
      for (ir::NodeId in : rank0.node(origin).inputs)
        if (partial(in) && !is_collective(in)) {
          origin = in;
          moved = true;
          break;
        }
    }
    return result(origin);
  }

  // 2. Otherwise the first value unrelated to the reference whose inputs are
  //    all fine; a partial input is fine for a collective, which reduces it.
  for (const auto &[id, layout] : layouts) {
    if (!bad(id) || partial(id))
      continue;
    const auto &inputs = rank0.node(id).inputs;
    bool inputs_fine = std::none_of(inputs.begin(), inputs.end(), [&](ir::NodeId in) {
      return bad(in) && !(partial(in) && is_collective(id));
    });
    if (inputs_fine)
      return result(id);
  }
  return std::nullopt;
}

namespace {
class ForwardEquivalenceCheck final : public Check {
public:
  std::string_view name() const override { return "forward-equivalence"; }

  void run(CheckContext &context) override {
    const ir::Trace &ref = context.program.reference();
    for (const ir::Output &out : ref.outputs)
      check_output(context, out);
  }

private:
  void check_output(CheckContext &context, const ir::Output &ref_out) {
    auto &program = context.program;
    auto &store = context.store;
    const ir::Output *rank0_out = find_output(program.rank(0), ref_out.path);
    ir::SourceLoc loc =
        rank0_out ? program.rank(0).node(rank0_out->node).loc : ir::SourceLoc{};
    DistributedValue value;
    value.reference_shape = ref_out.shape;
    value.reference = ref_out.elements;
    for (int r = 0; r < program.world(); ++r) {
      const ir::Output *o = find_output(program.rank(r), ref_out.path);
      if (!o) {
        context.findings.push_back(Finding::of(
            "SP001", loc,
            fmt::format("rank {} returns no output '{}' but the reference does", r,
                        ref_out.path)));
        return;
      }
      value.rank_shapes.push_back(o->shape);
      value.ranks.push_back(program.linked(r, o->elements));
    }

    Layout inferred = infer_layout(store, value);
    std::optional<Layout> target =
        inferred.acceptable() ? inferred : expected_layout(value);
    if (!target) {
      context.findings.push_back(
          Finding::of("SP001", loc,
                      fmt::format("output '{}' has shape {} on rank 0 but {} in the "
                                  "reference, which no sharding explains",
                                  ref_out.path, ir::shape_str(value.rank_shapes[0]),
                                  ir::shape_str(ref_out.shape))));
      return;
    }
    LayoutEquation eq = layout_equation(store, value, *target);
    std::string obligation =
        fmt::format("forward: '{}' is {}", ref_out.path, target->str());
    prover::Verdict verdict = blocked_by_rank_local(store, eq).value_or(
        prover::prove_equal(store, eq.lhs, eq.rhs, context.options));
    if (verdict.kind == prover::Verdict::Kind::Refuted)
      report_refutation(context, ref_out, value, eq, verdict, loc);
    context.obligations.push_back({obligation, loc, std::move(verdict)});
  }

  // A term still holding a rank's own leaf was not related to the reference.
  static std::optional<prover::Verdict>
  blocked_by_rank_local(const terms::TermStore &store, const LayoutEquation &eq) {
    for (TermId v : terms::variables_of(store, eq.lhs)) {
      const auto &var = store.variable(v);
      if (var.kind == terms::VarKind::RankLocal) {
        prover::Verdict verdict;
        verdict.why =
            fmt::format("depends on '{}', created at {} on one rank with no counterpart "
                        "of the same shape in the reference (create the whole tensor and "
                        "slice it per rank)",
                        var.name, var.origin);
        return verdict;
      }
    }
    return std::nullopt;
  }

  void report_refutation(CheckContext &context, const ir::Output &ref_out,
                         const DistributedValue &value, const LayoutEquation &eq,
                         const prover::Verdict &verdict, const ir::SourceLoc &loc) {
    auto &store = context.store;
    const prover::Counterexample &cex = *verdict.counterexample;
    auto divergence = locate_divergence(store, context.program, ref_out.path);
    bool partial = divergence && divergence->layout.kind == Layout::Kind::PartialSum;
    // A collective whose result is still a partial sum did reduce, but with
    // the wrong operation or group: a mismatch, not a missing reduction.
    bool misreduced = partial && divergence->category == ir::OpCategory::Collective;
    partial = partial && !misreduced;

    Finding f;
    bool scaled = divergence && divergence->layout.kind == Layout::Kind::Scaled;
    f.rule_id = partial ? "SP002" : scaled ? "SP005" : "SP001";
    f.severity = rule(f.rule_id).severity;
    f.loc = divergence ? divergence->loc : loc;
    if (partial)
      f.message = fmt::format(
          "the value computed here ({}) is a partial sum over ranks and reaches "
          "output '{}' without a reduction",
          divergence->op, ref_out.path);
    else if (scaled)
      f.message = fmt::format(
          "the value computed here ({}) is {}: a sum where an average belongs, "
          "or the reverse; output '{}' differs from the single-device reference",
          divergence->op, divergence->layout.str(), ref_out.path);
    else if (misreduced)
      f.message = fmt::format(
          "the collective here ({}) leaves every rank with a share of the "
          "reference that still has to be added up (wrong reduce op or group); "
          "output '{}' differs from the single-device reference",
          divergence->op, ref_out.path);
    else if (divergence)
      f.message =
          fmt::format("the value computed here ({}) is {}; output '{}' differs from the "
                      "single-device reference",
                      divergence->op, divergence->layout.str(), ref_out.path);
    else
      f.message = fmt::format("output '{}' differs from the single-device reference",
                              ref_out.path);

    // Alive2-style: example, then the reference value and every rank's.
    const auto &row = eq.rows[cex.element];
    auto values = [&](TermId v) {
      auto it = cex.values.find(v);
      return it == cex.values.end() ? 0.0 : it->second;
    };
    terms::DoubleEvaluator eval(store, values);
    // Minimised values are mostly 0: list the others. Inputs the element
    // does not depend on may take any value, so 0 is as good as any.
    f.details.push_back("Example:");
    for (const auto &[var, v] : cex.values)
      if (v != 0)
        f.details.push_back(
            fmt::format("  {} = {}", store.variable(var).name, format_value(v)));
    f.details.push_back("  every other input = 0");
    std::string element = ref_out.path + ir::index_str(ref_out.shape, row.reference);
    f.details.push_back(
        fmt::format("Reference (world 1): {} = {}", element,
                    format_value(eval(value.reference[row.reference]).value_or(NAN))));
    std::vector<int> disagree;
    for (std::size_t i = 0; i < eq.rows.size(); ++i) {
      const auto &other = eq.rows[i];
      if (other.local != row.local || (row.rank >= 0) != (other.rank >= 0))
        continue;
      double got = eval(eq.lhs[i]).value_or(NAN);
      double want = eval(eq.rhs[i]).value_or(NAN);
      bool differs = !terms::nearly_equal(got, want);
      std::string who =
          other.rank < 0 ? "Sum over ranks" : fmt::format("Rank {}", other.rank);
      std::string where =
          other.rank < 0
              ? element
              : ref_out.path + ir::index_str(value.rank_shapes[other.rank], other.local);
      f.details.push_back(fmt::format(
          "{}: {} = {}{}", who, where, format_value(got),
          differs ? fmt::format("  (should be {})", format_value(want)) : ""));
      if (differs && other.rank >= 0)
        disagree.push_back(other.rank);
    }
    if (!disagree.empty())
      f.details.push_back(fmt::format("Ranks that disagree with the reference: {}",
                                      fmt::join(disagree, ", ")));
    if (partial && infer_layout(store, value).kind == Layout::Kind::PartialSum)
      f.details.push_back("The ranks' values add up to the reference: an "
                          "all-reduce is missing");
    if (divergence && !(divergence->loc == loc))
      f.notes.push_back({loc, fmt::format("output '{}' is returned here", ref_out.path)});
    context.findings.push_back(std::move(f));
  }
};
} // namespace

std::unique_ptr<Check> make_forward_equivalence_check() {
  return std::make_unique<ForwardEquivalenceCheck>();
}

} // namespace shardproof::checkers
