#include "checkers/value_check.h"

#include "models/terms/evaluate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

namespace shardproof::checkers {

using terms::TermId;

const ir::Output *find_output(const ir::Trace &trace, const std::string &path) {
  for (const ir::Output &o : trace.outputs)
    if (o.path == path)
      return &o;
  return nullptr;
}

namespace {

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

// Values worth relating to the reference: anything symbolic, and concrete
// floats (a constant gradient can carry a wrong scale). Concrete integers are
// rank-specific bookkeeping (token ids, offsets, masks) and are skipped.
bool is_related_value(const terms::TermStore &store, const ir::Node &node) {
  bool floating = node.dtype == ir::DType::Float64 || node.dtype == ir::DType::Float32 ||
                  node.dtype == ir::DType::Float16 || node.dtype == ir::DType::BFloat16;
  return floating || std::any_of(node.elements.begin(), node.elements.end(),
                                 [&](TermId t) { return !store.is_const(t); });
}

// A term still holding a rank's own leaf was not related to the reference.
std::optional<prover::Verdict> blocked_by_rank_local(const terms::TermStore &store,
                                                     const LayoutEquation &eq) {
  for (TermId v : terms::variables_of(store, eq.lhs)) {
    const auto &var = store.variable(v);
    if (var.kind == terms::VarKind::RankLocal) {
      prover::Verdict verdict;
      if (var.name.starts_with("rng:")) { // a random draw (torch/random.py)
        verdict.why = fmt::format(
            "depends on the random draw '{}' made at {} on one rank, which the "
            "reference does not make from the same generator state and shape (a "
            "rank-dependent seed over a sharded value, or other draws before it): "
            "its values cannot be related to the reference's",
            var.name, var.origin);
        return verdict;
      }
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

// Do the ranks hold different values for the same element somewhere?
bool ranks_disagree(const terms::TermStore &store, const DistributedValue &value,
                    std::uint64_t seed) {
  terms::DoubleEvaluator eval(
      store, [seed](TermId v) { return prover::sample_value(seed, 0, v); });
  for (std::size_t i = 0; i < value.reference.size(); ++i)
    for (int r = 1; r < value.world(); ++r)
      if (value.ranks[r].size() == value.ranks[0].size() &&
          !terms::nearly_equal(eval(value.ranks[0][i]).value_or(NAN),
                               eval(value.ranks[r][i]).value_or(NAN)))
        return true;
  return false;
}

struct Diagnosis {
  RuleCode rule;
  std::string message;
};

// "the value computed here (linear)" or "the gradient computed here
// (backward of linear)".
std::string computed_here(const Divergence &d) {
  constexpr std::string_view custom = "grad:custom:", grad = "grad:";
  if (d.op.starts_with(custom)) // handed on unchanged by a custom backward
    return fmt::format("the gradient returned here (backward of {})",
                       d.op.substr(custom.size()));
  if (d.op.starts_with(grad))
    return fmt::format("the gradient computed here (backward of {})",
                       d.op.substr(grad.size()));
  return fmt::format("the value computed here ({})", d.op);
}

// `inferred`: the layout the obligation's value has (infer_layout).
Diagnosis diagnose(terms::TermStore &store, const ValueObligation &ob,
                   const Layout &inferred, const std::optional<Divergence> &divergence,
                   const prover::Seeds &seeds) {
  using Kind = Layout::Kind;
  const bool forward = ob.role == ir::Output::Role::Forward;
  const RuleCode mismatch_rule =
      forward ? RuleCode::ForwardMismatch : RuleCode::GradientMismatch;
  const std::string differs =
      fmt::format("{} differs from the single-device reference", ob.subject);
  // A value each rank answers for in part only (a distributed optimizer's
  // shard) is a partial sum elsewhere by design: that is no missing reduction.
  bool partial = divergence && divergence->layout.kind == Kind::PartialSum &&
                 ob.value.owned.empty();
  // A collective whose result is still a partial sum did reduce, but with
  // the wrong operation or group: a mismatch, not a missing reduction.
  bool misreduced = partial && divergence->category == ir::OpCategory::Collective;
  partial = partial && !misreduced;
  bool scaled = divergence && divergence->layout.kind == Kind::Scaled;

  if (ob.must_agree && ranks_disagree(store, ob.value, seeds.replicas)) {
    const bool norm = ob.role == ir::Output::Role::GradientNorm;
    return {RuleCode::ReplicaDivergence,
            fmt::format("{} differs across ranks although {}{}: {}", ob.subject,
                        norm ? "every rank must clip by the same norm"
                             : "the parameter is replicated",
                        partial ? fmt::format(" ({} is a partial sum that no rank "
                                              "reduces)",
                                              computed_here(*divergence))
                                : "",
                        norm ? "each rank scales its gradients by its own coefficient, "
                               "so the replicas drift apart"
                             : "the replicas will drift apart")};
  }
  if (partial)
    return {RuleCode::MissingReduction,
            fmt::format("{} is {} and reaches {} without a reduction",
                        computed_here(*divergence), divergence->layout.str(),
                        ob.subject)};
  if (scaled)
    return {RuleCode::WrongScaling,
            fmt::format("{} is {}: a sum where an average belongs, or the "
                        "reverse; {}",
                        computed_here(*divergence), divergence->layout.str(), differs)};
  // The whole value off by a constant factor, though no single operation
  // introduced it (a sum over ranks of values that were never averaged).
  if (const Layout &final = inferred; final.kind == Kind::Scaled)
    return {RuleCode::WrongScaling,
            fmt::format("{} is {}: a sum where an average belongs, or the "
                        "reverse",
                        ob.subject, final.str())};
  if (misreduced)
    return {mismatch_rule,
            fmt::format("the collective here ({}) leaves every rank with a share of "
                        "the reference that still has to be added up (wrong reduce op "
                        "or group); {}",
                        divergence->op, differs)};
  if (divergence && divergence->misaligned_rows)
    return {mismatch_rule,
            fmt::format("{} pairs rows of different tokens: its row {} combines "
                        "the reference's row {} of one operand with its row {} of "
                        "another (the operands' rows were put in different orders); "
                        "{}",
                        computed_here(*divergence), divergence->misaligned_rows->row,
                        divergence->misaligned_rows->first,
                        divergence->misaligned_rows->second, differs)};
  if (divergence && divergence->off_reference_path)
    return {mismatch_rule,
            fmt::format("{} comes from a code path the single-device run does not "
                        "take; {}",
                        computed_here(*divergence), differs)};
  if (divergence)
    return {mismatch_rule, fmt::format("{} is {}; {}", computed_here(*divergence),
                                       divergence->layout.str(), differs)};
  return {mismatch_rule, differs};
}

// The counterexample as data: the inputs it sets, the reference's element,
// and the value of each rank's row for that element (or the ranks' sum).
Example make_example(const CheckContext &context, const ValueObligation &ob,
                     const LayoutEquation &eq, const prover::Counterexample &cex) {
  const terms::TermStore &store = context.store;
  const DistributedValue &value = ob.value;
  const auto &row = eq.rows[cex.element];
  auto values = [&](TermId v) {
    auto it = cex.values.find(v);
    return it == cex.values.end() ? 0.0 : it->second;
  };
  terms::DoubleEvaluator eval(store, values);
  Example example;
  example.world = context.program.world();
  example.obligation = ob.name;
  example.layout = ob.layout.str();
  // Minimised values are mostly 0: list the others. Inputs the element
  // does not depend on may take any value, so 0 is as good as any.
  for (const auto &[var, v] : cex.values)
    if (v != 0)
      example.inputs.push_back({store.variable(var).name, v});
  example.element =
      ob.element_prefix + ir::index_str(value.reference_shape, row.reference);
  example.reference = eval(value.reference[row.reference]).value_or(NAN);
  for (std::size_t i = 0; i < eq.rows.size(); ++i) {
    const auto &other = eq.rows[i];
    if (other.local != row.local || (row.rank >= 0) != (other.rank >= 0))
      continue;
    Example::RankValue rank_value;
    rank_value.value = eval(eq.lhs[i]).value_or(NAN);
    double want = eval(eq.rhs[i]).value_or(NAN);
    if (!terms::nearly_equal(rank_value.value, want))
      rank_value.expected = want;
    rank_value.rank = other.rank < 0 ? Example::kSumOverRanks : value.rank_id(other.rank);
    rank_value.element =
        other.rank < 0 ? example.element
                       : ob.element_prefix +
                             ir::index_str(value.rank_shapes[other.rank], other.local);
    example.ranks.push_back(std::move(rank_value));
  }
  return example;
}

// Where a wrongly scaled value is made: its node, or, when the recipe driving
// a tree finished it, the tree's last operation on it.
ir::SourceLoc value_made_at(const ir::Trace &home, ir::NodeId node) {
  const ir::SourceLoc &loc = home.node(node).loc;
  if (!loc.harness)
    return loc;
  auto made = last_made_in_analysed_code(home, node);
  return made ? home.node(*made).loc : loc;
}

// How specific a located divergence is: the place of its strategy in
// kStrategies (a scale or a row arrangement explains more than the first
// unrelated value does).
std::size_t specificity(const std::optional<Divergence> &d);

// Where the value went wrong, looked for from the obligation's home and from
// the first rank the example shows wrong (a rank that agrees with the
// reference may hold no trace of the bug, and a cause on another rank is
// out of reach: ancestry stops at collectives): the more specific of the
// two, the home's on a tie.
struct Located {
  int rank;
  ir::NodeId node;
  std::optional<Divergence> divergence;
};
// Where the message that rank `rank` received at `node` was sent: the
// sender and the node it sent.
std::optional<std::pair<int, ir::NodeId>> sent_from(const ir::LinkedProgram &program,
                                                    int rank, ir::NodeId node) {
  auto message = [](const ir::Collective &c) {
    return c.kind == ir::CollectiveKind::SendRecv;
  };
  const auto &calls = program.rank(rank).collectives;
  auto received = std::find_if(calls.begin(), calls.end(), [&](const ir::Collective &c) {
    return message(c) && c.node == node && !c.outputs.empty();
  });
  if (received == calls.end() || received->src < 0 || received->src >= program.world())
    return std::nullopt;
  const ir::Trace &sender = program.rank(received->src);
  for (const ir::Collective &c : sender.collectives)
    if (message(c) && c.group == received->group && c.sequence == received->sequence &&
        c.outputs.empty() && !sender.node(c.node).inputs.empty())
      return std::pair{received->src, sender.node(c.node).inputs[0]};
  return std::nullopt;
}

// The messages that rank `rank` received and that node `of` is made from,
// latest first (ids grow in execution order), with where each was sent.
std::vector<std::pair<int, ir::NodeId>> messages_behind(const ir::LinkedProgram &program,
                                                        int rank, ir::NodeId of) {
  const ir::Trace &home = program.rank(rank);
  std::set<ir::NodeId> ancestors;
  for (std::vector<ir::NodeId> todo{of}; !todo.empty();) {
    ir::NodeId id = todo.back();
    todo.pop_back();
    if (id < home.nodes.size() && ancestors.insert(id).second)
      todo.insert(todo.end(), home.node(id).inputs.begin(), home.node(id).inputs.end());
  }
  std::vector<std::pair<int, ir::NodeId>> out;
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
    if (home.node(*it).category == ir::OpCategory::Collective)
      if (auto sent = sent_from(program, rank, *it))
        out.push_back(*sent);
  return out;
}

// A wrong value made from messages may have been made wrong by a sender (a
// pipeline stage that corrupts the gradient it sends back): where the value
// the sender sent is itself wrong, a scale or an arrangement of rows that
// its sender's values carry back to a cause, that cause is reported, and
// its own messages are followed in turn.
void follow_messages(CheckContext &context, Located &located) {
  constexpr std::size_t kMessages = 4; // the latest ones tried, at each hop
  auto carries = [](const std::optional<Divergence> &d) {
    return d && (d->strategy == "scaled-chain" || d->strategy == "misplaced-rows");
  };
  for (int hop = 0; hop < context.program.world() && carries(located.divergence) &&
                    located.divergence->node;
       ++hop) {
    auto senders =
        messages_behind(context.program, located.rank, *located.divergence->node);
    if (senders.size() > kMessages)
      senders.resize(kMessages);
    bool moved = false;
    for (const auto &[rank, sent] : senders)
      if (auto there = locate_divergence(context.store, context.program, rank, sent,
                                         Layout{}, context.seeds());
          carries(there)) {
        located = Located{rank, sent, std::move(there)};
        moved = true;
        break;
      }
    if (!moved)
      return;
  }
}

Located locate_on_a_wrong_rank(CheckContext &context, const ValueObligation &ob,
                               const Layout &inferred, const Example &example) {
  auto locate = [&](int rank, ir::NodeId node) {
    return Located{rank, node,
                   locate_divergence(context.store, context.program, rank, node, inferred,
                                     context.seeds())};
  };
  Located found = locate(ob.home_rank, ob.home_node);
  const std::vector<int> wrong = example.disagreeing_ranks();
  const ir::Output *out =
      wrong.empty() || wrong[0] == ob.home_rank
          ? nullptr
          : find_output(context.program.rank(wrong[0]), ob.element_prefix);
  if (out)
    if (Located at_wrong = locate(wrong[0], out->node);
        specificity(at_wrong.divergence) < specificity(found.divergence))
      found = std::move(at_wrong);
  follow_messages(context, found);
  return found;
}

void report_refutation(CheckContext &context, const ValueObligation &ob,
                       const LayoutEquation &eq, const prover::Verdict &verdict) {
  auto &store = context.store;
  const Layout inferred = infer_layout(store, ob.value, context.seeds());
  Example example = make_example(context, ob, eq, *verdict.counterexample);
  // The locator follows a forward and its backward; an optimizer step's
  // writes are reported where the step made the value, and a gradient norm
  // where it is computed: each rank's partial norm differs from the
  // reference's by design, so the first value that differs is no cause.
  const bool follows = ob.role != ir::Output::Role::ParameterAfterStep &&
                       ob.role != ir::Output::Role::GradientNorm;
  auto [home_rank, home_node, divergence] =
      follows ? locate_on_a_wrong_rank(context, ob, inferred, example)
              : Located{ob.home_rank, ob.home_node, std::nullopt};
  const ir::Trace &home = context.program.rank(home_rank);
  if (divergence)
    move_into_analysed_code(home, *divergence, home_node);
  Diagnosis diagnosis = diagnose(store, ob, inferred, divergence, context.seeds());
  // A scale that no single operation explains shows where the value is made.
  bool at_value = diagnosis.rule == RuleCode::WrongScaling &&
                  !(divergence && divergence->layout.kind == Layout::Kind::Scaled);
  ir::SourceLoc where =
      at_value ? value_made_at(home, home_node) : (divergence ? divergence->loc : ob.loc);
  // A value that depends on a rank's reseeded random draw: the draw is the
  // cause (rng_divergence.cpp).
  if (!context.random_divergences.empty())
    for (TermId v : terms::variables_of(store, eq.lhs))
      if (auto it = context.random_divergences.find(v);
          it != context.random_divergences.end()) {
        diagnosis = {RuleCode::RngDivergence,
                     fmt::format("{}, so {} differs from the single-device reference",
                                 it->second.message, ob.subject)};
        where = it->second.loc;
        break;
      }
  Finding f = Finding::of(diagnosis.rule, where, diagnosis.message);
  f.example = std::move(example);
  if (const Layout &final = inferred; final.kind == Layout::Kind::PartialSum)
    f.details.push_back(
        final.factor == 1
            ? std::string("The ranks' values add up to the reference: an all-reduce "
                          "is missing")
            : fmt::format("The ranks' values add up to {} times the reference: an "
                          "all-reduce is missing, and its result is to be scaled by {}",
                          final.factor.get_str(), mpq_class(1 / final.factor).get_str()));
  if (!(where == ob.loc) && !ob.loc_note.empty())
    f.notes.push_back({ob.loc, ob.loc_note});
  context.findings.push_back(std::move(f));
}
} // namespace

AxisGroups axis_groups(const ir::LinkedProgram &program) {
  AxisGroups out;
  auto add = [&](Layout::Over over, std::vector<int> ir::Trace::*group_of) {
    std::set<std::vector<int>> groups;
    for (int r = 0; r < program.world(); ++r)
      if (!(program.rank(r).*group_of).empty())
        groups.insert(program.rank(r).*group_of);
    if (!groups.empty())
      out[over].assign(groups.begin(), groups.end());
  };
  add(Layout::Over::TensorParallel, &ir::Trace::tensor_parallel_group);
  add(Layout::Over::DataParallel, &ir::Trace::data_parallel_group);
  return out;
}

namespace {

// The home rank's nodes paired with their twins in the reference and on every
// rank (index_nodes: same line, op and occurrence).
class Twins {
public:
  Twins(ir::LinkedProgram &program, int home_rank)
      : program_(program), home_rank_(home_rank),
        ref_index_(index_nodes(program.reference())),
        keys_(program.rank(home_rank).nodes.size()), groups_(axis_groups(program)) {
    for (int r = 0; r < program.world(); ++r)
      rank_index_.push_back(index_nodes(program.rank(r)));
    for (const auto &[key, id] : rank_index_[home_rank].nodes)
      keys_[id] = key;
  }

  // The reference node made where the home rank made `id`, if any.
  std::optional<ir::NodeId> in_reference(ir::NodeId id) const {
    auto it = ref_index_.nodes.find(keys_[id]);
    return it == ref_index_.nodes.end() ? std::nullopt : std::optional(it->second);
  }

  // The node rank `r` made where the home rank made `id`, if any.
  std::optional<ir::NodeId> on_rank(int r, ir::NodeId id) const {
    auto it = rank_index_[r].nodes.find(keys_[id]);
    return it == rank_index_[r].nodes.end() ? std::nullopt : std::optional(it->second);
  }

  // Whether `id`'s line ran its op equally often in every run.
  bool pairable(ir::NodeId id) {
    int n = ref_index_.counts[site_of(keys_[id])];
    return std::all_of(rank_index_.begin(), rank_index_.end(),
                       [&](NodeIndex &r) { return r.counts[site_of(keys_[id])] == n; });
  }

  // The value every rank computed at `id` (no reference yet), or nullopt
  // when some rank has no twin of it.
  std::optional<DistributedValue> rank_values(ir::NodeId id) {
    const NodeKey &key = keys_[id];
    DistributedValue value;
    int n = rank_index_[home_rank_].counts[site_of(key)];
    for (int r = 0; r < program_.world(); ++r) {
      auto it = rank_index_[r].nodes.find(key);
      if (it == rank_index_[r].nodes.end() || rank_index_[r].counts[site_of(key)] != n)
        return std::nullopt;
      const ir::Node &twin = program_.rank(r).node(it->second);
      value.rank_shapes.push_back(twin.shape);
      value.ranks.push_back(program_.linked(r, twin.elements));
    }
    value.axis_groups = groups_;
    return value;
  }

private:
  static SiteKey site_of(const NodeKey &key) {
    return SiteKey{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
  }

  ir::LinkedProgram &program_;
  int home_rank_;
  NodeIndex ref_index_;
  std::vector<NodeIndex> rank_index_;
  std::vector<NodeKey> keys_; // of every node of the home rank
  AxisGroups groups_;
};

// A node on a path the reference never ran has no twin by line; relate it
// to any reference value its shape allows (relation inference, as for
// values at module boundaries). No shape-compatible value: unknown, not bad.
std::optional<Layout> relate_off_path(terms::TermStore &store, const ir::Trace &ref,
                                      DistributedValue value,
                                      const prover::Seeds &seeds) {
  bool comparable = false;
  for (auto it = ref.nodes.rbegin(); it != ref.nodes.rend(); ++it) {
    if (!is_related_value(store, *it))
      continue;
    value.reference_shape = it->shape;
    value.reference = it->elements;
    if (candidate_layouts(value).empty())
      continue;
    comparable = true;
    Layout layout = infer_layout(store, value, seeds);
    if (layout.kind != Layout::Kind::None)
      return layout;
  }
  return comparable ? std::optional<Layout>(Layout{}) : std::nullopt;
}

// The home rank's value at `node` as a value that rank alone holds (to
// relate where the other ranks have no twin of it: a pipeline stage's own).
DistributedValue home_value(ir::LinkedProgram &program, int home_rank,
                            const ir::Node &node) {
  DistributedValue value;
  value.rank_shapes = {node.shape};
  value.ranks = {program.linked(home_rank, node.elements)};
  value.members = {home_rank};
  return value;
}

// What every strategy reads: the home rank's ancestors of the value's node,
// each related to the reference where it can be. Built once, never changed
// by a strategy.
struct Ancestry {
  const ir::Trace &home;
  ir::NodeId start;                        // the value's node
  std::map<ir::NodeId, Layout> layouts;    // symbolic ancestors with twins everywhere
  std::set<ir::NodeId> off_reference_path; // ancestors made where the reference never ran
  // Values the recipe makes from its inputs alone (a rank's slice of the
  // batch): given as the recipe declares them, whether or not layout
  // inference can relate them (a slice along two groups in two steps).
  std::set<ir::NodeId> declared;
  // For the operands of a wrong elementwise operation: the row of its twin in
  // the reference that each of its rows on the home rank is, and how many
  // rows the twin has.
  struct OperandRows {
    std::vector<std::size_t> rows;
    std::int64_t reference_rows = 0;
  };
  std::map<ir::NodeId, OperandRows> operand_rows;
  // The analysed code's own operations on gradients: a custom Function's
  // backward (a gradient it hands on as it got it is a "grad:custom:" node
  // at its `return`), a hook, finalize_grads. Not the built-in gradient
  // formulas ("grad:" nodes), which are right by construction.
  std::set<ir::NodeId> gradient_code;
  std::set<ir::NodeId> linked_collectives; // the calls linked across ranks

  const Layout *layout_of(ir::NodeId id) const {
    auto it = layouts.find(id);
    return it == layouts.end() ? nullptr : &it->second;
  }
  // Rows of the reference in another order are fine inside a computation
  // (tokens permuted for a dispatch), not where the obligation's value is made.
  bool bad(ir::NodeId id) const {
    const Layout *l = layout_of(id);
    return l && !l->acceptable() && !(l->reordered() && id != start) &&
           !is_parameter(id) && !declared.count(id);
  }
  // A parameter is not computed: how it relates to the reference is the
  // harness's declaration (its shard), which layout inference may not see
  // (an expert's shard under ep x tp), and its gradient is checked apart.
  bool is_parameter(ir::NodeId id) const {
    const ir::Node &n = home.node(id);
    return n.category == ir::OpCategory::Leaf && n.inputs.empty() &&
           n.op.starts_with("param");
  }
  bool partial(ir::NodeId id) const {
    const Layout *l = layout_of(id);
    return l && l->kind == Layout::Kind::PartialSum;
  }
  bool is_collective(ir::NodeId id) const {
    return home.node(id).category == ir::OpCategory::Collective;
  }
  bool is_gradient_code(ir::NodeId id) const { return gradient_code.count(id) > 0; }
  // A collective over a group of one: the identity, with no call to link.
  bool is_identity_collective(ir::NodeId id) const {
    return is_collective(id) && !linked_collectives.count(id);
  }
  Divergence at(ir::NodeId id) const {
    const ir::Node &n = home.node(id);
    const Layout *l = layout_of(id);
    return Divergence{n.loc, n.op, n.category, l ? *l : Layout{}, false, id, {}};
  }
  // Walks back from `from` while the inputs keep satisfying `same`, showing
  // `visit` every node it steps to.
  template <class Same, class Visit = void (*)(ir::NodeId)>
  ir::NodeId origin_of(
      ir::NodeId from, Same same, Visit visit = [](ir::NodeId) {}) const {
    for (bool moved = true; moved;) {
      moved = false;
      for (ir::NodeId in : home.node(from).inputs)
        if (same(in)) {
          from = in;
          moved = true;
          visit(in);
          break;
        }
    }
    return from;
  }
};

// An operation that combines its operands row by row: a forward elementwise
// one (a gradient node's inputs are the output gradients and saved values
// it came from, not operands combined row by row).
bool combines_rows(const ir::Node &n) {
  return n.category == ir::OpCategory::Elementwise && !n.op.starts_with("grad:") &&
         !n.shape.empty() && n.inputs.size() >= 2;
}

// Whether no two rows of `value`'s reference are equal, so that a row found
// in it says which row it is (a mask's rows of 0s and 1s do not).
bool distinct_rows(terms::TermStore &store, const DistributedValue &value,
                   const prover::Seeds &seeds) {
  DistributedValue itself = value;
  itself.rank_shapes = {value.reference_shape};
  itself.ranks = {value.reference};
  auto rows = rows_of_reference(store, itself, seeds);
  if (!rows)
    return false;
  for (std::size_t i = 0; i < rows->rows[0].size(); ++i)
    if (rows->rows[0][i] != i)
      return false;
  return true;
}

// A gradient the stand-in's own autograd computed (the VJP of a built-in op),
// as opposed to one the analysed code computed or handed on.
bool is_gradient_formula(const ir::Node &n) {
  return n.op.starts_with("grad:") && !n.op.starts_with("grad:custom:");
}

// The analysed code's operations on gradients: those made from a gradient
// (ids grow in execution order: inputs first) that no built-in formula made.
void mark_gradient_code(Ancestry &a, const std::set<ir::NodeId> &visited) {
  std::set<ir::NodeId> from_gradients;
  for (ir::NodeId id : visited) {
    const ir::Node &n = a.home.node(id);
    bool made_from = n.op.starts_with("grad:") ||
                     std::any_of(n.inputs.begin(), n.inputs.end(), [&](ir::NodeId in) {
                       return from_gradients.count(in) > 0;
                     });
    if (!made_from)
      continue;
    from_gradients.insert(id);
    // The engine's sum of a tensor's gradients over its uses is an add of
    // gradients alone, and is no more the code's than the formulas are.
    bool sum_of_gradients =
        n.op == "add" &&
        std::all_of(n.inputs.begin(), n.inputs.end(),
                    [&](ir::NodeId in) { return from_gradients.count(in) > 0; });
    if (!is_gradient_formula(n) && !sum_of_gradients)
      a.gradient_code.insert(id);
  }
}

Ancestry relate_ancestors(terms::TermStore &store, ir::LinkedProgram &program,
                          int home_rank, ir::NodeId start_node,
                          const Layout &value_layout, const prover::Seeds &seeds) {
  const ir::Trace &ref = program.reference();
  Twins twins(program, home_rank);
  Ancestry ancestry{program.rank(home_rank), start_node, {}, {}, {}, {}};
  const ir::Trace &home = ancestry.home;
  // The value every rank holds at `id`, with its twin in the reference.
  auto twin_value = [&](ir::NodeId id) -> std::optional<DistributedValue> {
    std::optional<ir::NodeId> ref_id = twins.in_reference(id);
    if (!ref_id || !twins.pairable(id))
      return std::nullopt;
    auto value = twins.rank_values(id);
    if (value) {
      value->reference_shape = ref.node(*ref_id).shape;
      value->reference = ref.node(*ref_id).elements;
    }
    return value;
  };
  std::vector<ir::NodeId> stack{start_node};
  std::set<ir::NodeId> visited;
  while (!stack.empty()) {
    ir::NodeId id = stack.back();
    stack.pop_back();
    if (id >= home.nodes.size() || !visited.insert(id).second)
      continue;
    const ir::Node &node = home.node(id);
    for (ir::NodeId in : node.inputs)
      stack.push_back(in);
    if (!is_related_value(store, node))
      continue;
    std::optional<ir::NodeId> ref_id = twins.in_reference(id);
    if (!ref_id) {
      ancestry.off_reference_path.insert(id);
      auto value = twins.rank_values(id);
      bool alone = !value; // only some ranks made it: the home rank's own
      if (alone)
        value = home_value(program, home_rank, node);
      if (auto layout = relate_off_path(store, ref, std::move(*value), seeds);
          layout && !(alone && layout->kind == Layout::Kind::None))
        ancestry.layouts[id] = *layout;
      continue;
    }
    if (auto value = twin_value(id)) {
      Layout layout = infer_layout(store, *value, seeds);
      if (layout.kind == Layout::Kind::None)
        layout = rows_of_reference(store, *value, seeds).value_or(layout);
      ancestry.layouts[id] = layout;
    }
  }
  ancestry.layouts.try_emplace(start_node, value_layout); // the output node itself
  for (ir::NodeId id : visited) // ids grow in execution order: inputs first
    if (const ir::Node &n = home.node(id);
        n.loc.harness &&
        std::all_of(n.inputs.begin(), n.inputs.end(),
                    [&](ir::NodeId in) { return ancestry.declared.count(in) > 0; }))
      ancestry.declared.insert(id);
  mark_gradient_code(ancestry, visited);
  for (const ir::Collective &call : home.collectives)
    ancestry.linked_collectives.insert(call.node);
  // Which of its twin's rows each operand of a wrong elementwise operation
  // holds on the home rank (misaligned_rows compares them).
  for (const auto &[id, layout] : ancestry.layouts) {
    const ir::Node &n = home.node(id);
    if (!combines_rows(n) || !ancestry.bad(id))
      continue;
    for (ir::NodeId in : n.inputs) {
      if (ancestry.operand_rows.count(in))
        continue;
      if (auto value = twin_value(in); value && distinct_rows(store, *value, seeds))
        if (auto rows = rows_of_reference(store, *value, seeds))
          ancestry.operand_rows[in] = {std::move(rows->rows[home_rank]),
                                       value->reference_shape[0]};
    }
  }
  return ancestry;
}

// A built-in gradient formula computes what it is given correctly: one
// whose input is wrong too is no cause. Walks back through such formulas to
// the wrong input and, when the analysed code's gradient code made it, back
// through that code while its values are wrong or unrelated (a custom
// backward's wrong slice of its gradient, then a copy of it).
ir::NodeId past_gradient_formulas(const Ancestry &a, ir::NodeId at) {
  auto wrong_input = [&](ir::NodeId id) -> std::optional<ir::NodeId> {
    const auto &inputs = a.home.node(id).inputs;
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](ir::NodeId in) { return a.bad(in) && !a.partial(in); });
    return it == inputs.end() ? std::nullopt : std::optional(*it);
  };
  ir::NodeId from = at;
  while (is_gradient_formula(a.home.node(at)))
    if (auto in = wrong_input(at))
      at = *in;
    else
      break;
  if (at == from || !a.is_gradient_code(at))
    return at;
  return a.origin_of(at, [&](ir::NodeId in) {
    return a.is_gradient_code(in) && !a.is_collective(in) && !a.partial(in) &&
           (!a.layout_of(in) || a.bad(in));
  });
}

// Where the chain of values that carry the value's own layout begins, when
// that layout is of `kind` (`same` says two of that kind are one relation),
// or, where a gradient formula begins it, the wrong value it was given.
template <typename Same>
std::optional<Divergence> chain_origin(const Ancestry &a, Layout::Kind kind, Same same) {
  const Layout *out = a.layout_of(a.start);
  if (!out || out->kind != kind)
    return std::nullopt;
  ir::NodeId origin = a.origin_of(a.start, [&](ir::NodeId in) {
    const Layout *l = a.layout_of(in);
    return l && l->kind == kind && same(*l, *out);
  });
  ir::NodeId cause = past_gradient_formulas(a, origin);
  Divergence d = a.at(cause);
  d.off_reference_path = cause != origin && a.off_reference_path.count(cause) > 0;
  return d;
}

// A value off by a constant factor: the factor was introduced where the chain
// of values scaled by that same factor begins (a local mean's scale that a
// later average undoes is not the culprit).
std::optional<Divergence> scaled_chain(const Ancestry &a) {
  return chain_origin(a, Layout::Kind::Scaled, [](const Layout &l, const Layout &out) {
    return l.factor == out.factor;
  });
}

// Rows of the reference in the wrong places (a wrong slice, tokens put back
// in the wrong order): the culprit is where that arrangement of rows was
// made, not the row-wise operations that carried it on.
std::optional<Divergence> misplaced_rows(const Ancestry &a) {
  return chain_origin(a, Layout::Kind::Rows, [](const Layout &l, const Layout &out) {
    return l.rows == out.rows;
  });
}

// A partial sum that reaches the value without crossing a collective is a
// missing reduction. Reported at the first collective over a group of one
// on its way (a reduction over the wrong group, which reduces nothing), else
// where the analysed code's gradient code first handed it on (a custom
// backward that returns it unreduced), else where that partial value was made.
std::optional<Divergence> unreduced_partial_sum(const Ancestry &a) {
  auto reduces = [&](ir::NodeId id) {
    return a.is_collective(id) && !a.is_identity_collective(id);
  };
  std::set<ir::NodeId> unreduced;
  for (std::vector<ir::NodeId> todo{a.start}; !todo.empty();) {
    ir::NodeId id = todo.back();
    todo.pop_back();
    if (!unreduced.insert(id).second || reduces(id))
      continue; // a collective is where partial values are meant to end
    for (ir::NodeId in : a.home.node(id).inputs)
      todo.push_back(in);
  }
  std::optional<ir::NodeId> latest_partial;
  for (ir::NodeId id : unreduced)
    if (a.partial(id))
      latest_partial = id; // ids grow in execution order: keep the last
  if (!latest_partial)
    return std::nullopt;
  if (reduces(*latest_partial)) // reduced, with the wrong op or group
    return a.at(*latest_partial);
  std::vector<ir::NodeId> chain{*latest_partial}; // latest first
  a.origin_of(
      *latest_partial, [&](ir::NodeId in) { return a.partial(in) && !reduces(in); },
      [&](ir::NodeId in) { chain.push_back(in); });
  for (auto pick : {&Ancestry::is_identity_collective, &Ancestry::is_gradient_code})
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if ((a.*pick)(*it))
        return a.at(*it);
  return a.at(chain.back());
}

// An elementwise operation whose operands hold the reference's rows in
// different orders combines rows of different tokens (a token's expert
// output with another token's routing probability): the first such
// operation whose own value is wrong is where the orders parted.
std::optional<Divergence> misaligned_rows(const Ancestry &a) {
  for (const auto &[id, layout] : a.layouts) {
    const ir::Node &n = a.home.node(id);
    if (!combines_rows(n) || !a.bad(id))
      continue;
    // In the reference the operation combines row i of each operand's twin
    // with row i of the others'; here row k combines the twins' rows this
    // rank's operands hold at k. Only operands shaped as the result count
    // (not a bias broadcast over rows).
    std::vector<const Ancestry::OperandRows *> operands;
    for (ir::NodeId in : n.inputs)
      if (auto it = a.operand_rows.find(in);
          it != a.operand_rows.end() && a.home.node(in).shape.size() == n.shape.size() &&
          a.home.node(in).shape[0] == n.shape[0])
        operands.push_back(&it->second);
    for (std::size_t j = 1; j < operands.size(); ++j) {
      const Ancestry::OperandRows &first = *operands[0], &other = *operands[j];
      if (first.rows.size() != other.rows.size() ||
          first.reference_rows != other.reference_rows)
        continue;
      auto [here, there] =
          std::mismatch(first.rows.begin(), first.rows.end(), other.rows.begin());
      if (here == first.rows.end())
        continue;
      Divergence d = a.at(id);
      d.misaligned_rows = Divergence::MisalignedRows{
          static_cast<std::size_t>(here - first.rows.begin()), *here, *there};
      return d;
    }
  }
  return std::nullopt;
}

// A collective that takes a partial sum and leaves a value that relates to
// the reference in no way reduced it over the wrong group (or with the wrong
// op): the first such.
std::optional<Divergence> misreduced_partial_sum(const Ancestry &a) {
  for (const auto &[id, layout] : a.layouts) {
    const auto &inputs = a.home.node(id).inputs;
    if (a.is_collective(id) && layout.kind == Layout::Kind::None && a.bad(id) &&
        std::any_of(inputs.begin(), inputs.end(),
                    [&](ir::NodeId in) { return a.partial(in); }))
      return a.at(id);
  }
  return std::nullopt;
}

// Otherwise the first value unrelated to the reference whose inputs are all
// fine is where the computation left the reference.
std::optional<Divergence> first_unrelated_value(const Ancestry &a) {
  for (const auto &[id, layout] : a.layouts) {
    if (!a.bad(id) || a.partial(id))
      continue;
    const auto &inputs = a.home.node(id).inputs;
    // A partial input is fine here: partial values that reach the output
    // unreduced were handled before, so this one was meant for a reduction
    // and the node that combines it wrongly (a bias added to it, a wrong
    // reduce op) is the culprit.
    bool inputs_fine = std::none_of(inputs.begin(), inputs.end(), [&](ir::NodeId in) {
      return a.bad(in) && !a.partial(in);
    });
    if (!inputs_fine)
      continue;
    // Inputs made on lines the reference never ran, that no reference value
    // explains, are the likelier culprit: report where that chain begins.
    auto unexplained = [&](ir::NodeId in) {
      return a.off_reference_path.count(in) && !a.layout_of(in);
    };
    if (std::any_of(inputs.begin(), inputs.end(), unexplained)) {
      // Walk the chain back; the culprit is the operation closest to the
      // wrong value that is not itself a collective (collectives move data
      // as told; the reshapes, slices and concatenations around them decide
      // where it goes).
      std::optional<ir::NodeId> culprit;
      ir::NodeId start = a.origin_of(id, unexplained, [&](ir::NodeId in) {
        if (!culprit && !a.is_collective(in))
          culprit = in;
      });
      ir::NodeId at = culprit.value_or(start);
      const ir::Node &n = a.home.node(at);
      return Divergence{n.loc, n.op, n.category, Layout{}, true, at, {}};
    }
    Divergence d = a.at(id);
    d.off_reference_path = a.off_reference_path.count(id) > 0;
    return d;
  }
  return std::nullopt;
}

// The strategies, tried in this order; the first that locates a divergence
// wins (a scale or a row arrangement explains the whole value, a missing
// reduction explains a partial sum, and only then is the first unrelated
// value the culprit).
struct Strategy {
  std::string_view name;
  std::optional<Divergence> (*locate)(const Ancestry &);
};
constexpr Strategy kStrategies[] = {
    {"scaled-chain", scaled_chain},
    {"misplaced-rows", misplaced_rows},
    {"unreduced-partial-sum", unreduced_partial_sum},
    {"misaligned-rows", misaligned_rows},
    {"misreduced-partial-sum", misreduced_partial_sum},
    {"first-unrelated-value", first_unrelated_value},
};

std::size_t specificity(const std::optional<Divergence> &d) {
  if (!d)
    return std::size(kStrategies);
  return std::find_if(std::begin(kStrategies), std::end(kStrategies),
                      [&](const Strategy &s) { return s.name == d->strategy; }) -
         std::begin(kStrategies);
}

// The part of a value that a slice of it takes, on every run: for each run
// (the reference last), the node and the positions of its elements that the
// slice's elements are.
struct SlicedPart {
  std::vector<ir::NodeId> nodes;
  std::vector<std::vector<std::size_t>> positions;
};

// Where the part of `from` that `part` follows moves to in `to`, an input of
// `from` in every run: the same positions through an elementwise operation
// of one shape, the positions of the same terms through a slice or view.
std::optional<SlicedPart> follow_part(const std::vector<const ir::Trace *> &runs,
                                      const SlicedPart &part,
                                      const std::vector<ir::NodeId> &to) {
  SlicedPart next{to, {}};
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ir::Node &from = runs[k]->node(part.nodes[k]), &input = runs[k]->node(to[k]);
    if (from.category == ir::OpCategory::Elementwise && from.shape == input.shape) {
      next.positions.push_back(part.positions[k]);
      continue;
    }
    if (from.category != ir::OpCategory::View && from.category != ir::OpCategory::Index)
      return std::nullopt;
    std::map<TermId, std::size_t> where;
    for (std::size_t i = input.elements.size(); i-- > 0;)
      where[input.elements[i]] = i;
    std::vector<std::size_t> moved;
    for (std::size_t p : part.positions[k]) {
      auto it = where.find(from.elements[p]);
      if (it == where.end())
        return std::nullopt;
      moved.push_back(it->second);
    }
    next.positions.push_back(std::move(moved));
  }
  return next;
}

// The elements `part` follows, as a value shaped as the slice it began at
// (`shapes_of`: the part that slice is, in every run).
DistributedValue part_value(ir::LinkedProgram &program,
                            const std::vector<const ir::Trace *> &runs,
                            const SlicedPart &shapes_of, const SlicedPart &part) {
  DistributedValue value;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ir::Node &n = runs[k]->node(part.nodes[k]);
    std::vector<TermId> elements;
    for (std::size_t p : part.positions[k])
      elements.push_back(n.elements[p]);
    ir::Shape shape = runs[k]->node(shapes_of.nodes[k]).shape;
    if (k + 1 == runs.size()) {
      value.reference_shape = shape;
      value.reference = std::move(elements);
    } else {
      value.rank_shapes.push_back(shape);
      value.ranks.push_back(program.linked(static_cast<int>(k), elements));
    }
  }
  value.axis_groups = axis_groups(program);
  return value;
}

// A scale that begins at a slice of a value no layout relates as a whole (a
// flat bucket of every gradient, divided by the wrong factor) was made before
// the slice: follows the sliced elements back through the bucket while they
// keep the scale, and moves the divergence to where they took it on.
void scale_before_a_slice(terms::TermStore &store, ir::LinkedProgram &program,
                          int home_rank, Divergence &found, const prover::Seeds &seeds) {
  const ir::Trace &home = program.rank(home_rank);
  if (!found.node || (home.node(*found.node).category != ir::OpCategory::View &&
                      home.node(*found.node).category != ir::OpCategory::Index))
    return;
  Twins twins(program, home_rank);
  std::vector<const ir::Trace *> runs;
  for (int r = 0; r < program.world(); ++r)
    runs.push_back(&program.rank(r));
  runs.push_back(&program.reference());
  // The twins of `id` in every run, the reference last.
  auto twins_of = [&](ir::NodeId id) -> std::optional<std::vector<ir::NodeId>> {
    std::vector<ir::NodeId> out;
    for (int r = 0; r < program.world(); ++r)
      if (auto t = twins.on_rank(r, id))
        out.push_back(*t);
    if (auto t = twins.in_reference(id);
        t && out.size() == runs.size() - 1 && twins.pairable(id))
      out.push_back(*t);
    return out.size() == runs.size() ? std::optional(out) : std::nullopt;
  };
  auto start = twins_of(*found.node);
  if (!start)
    return;
  SlicedPart slice{*start, {}};
  for (std::size_t k = 0; k < runs.size(); ++k) {
    slice.positions.emplace_back(runs[k]->node((*start)[k]).elements.size());
    std::iota(slice.positions.back().begin(), slice.positions.back().end(), 0);
  }
  SlicedPart part = slice;
  for (ir::NodeId at = *found.node;;) {
    const auto &inputs = home.node(at).inputs;
    if (inputs.size() != 1 && home.node(at).category != ir::OpCategory::Elementwise)
      return;
    std::optional<SlicedPart> next;
    ir::NodeId input = 0;
    for (ir::NodeId in : inputs)
      if (auto to = twins_of(in); to && (next = follow_part(runs, part, *to))) {
        input = in;
        break;
      }
    if (!next)
      return;
    Layout layout = infer_layout(store, part_value(program, runs, slice, *next), seeds);
    if (layout.kind != Layout::Kind::Scaled || layout.factor != found.layout.factor)
      return;
    const ir::Node &n = home.node(input);
    found.loc = n.loc;
    found.op = n.op;
    found.category = n.category;
    found.node = input;
    found.layout = layout;
    part = std::move(*next);
    at = input;
  }
}

} // namespace

std::optional<Divergence> locate_divergence(terms::TermStore &store,
                                            ir::LinkedProgram &program, int home_rank,
                                            ir::NodeId start_node,
                                            const Layout &value_layout,
                                            const prover::Seeds &seeds) {
  const Ancestry ancestry =
      relate_ancestors(store, program, home_rank, start_node, value_layout, seeds);
  for (const Strategy &strategy : kStrategies)
    if (std::optional<Divergence> found = strategy.locate(ancestry)) {
      found->strategy = strategy.name;
      if (strategy.locate == scaled_chain)
        scale_before_a_slice(store, program, home_rank, *found, seeds);
      return found;
    }
  return std::nullopt;
}

// A value made in the recipe (an input's slice) is reported where the tree
// first takes it.
std::optional<ir::NodeId> last_made_in_analysed_code(const ir::Trace &home,
                                                     ir::NodeId of) {
  if (of >= home.nodes.size())
    return std::nullopt;
  // Ids grow in execution order: walking down from `of`, the first producer
  // that is the tree's is the last the tree made.
  std::vector<bool> needed(of + 1, false);
  needed[of] = true;
  for (ir::NodeId id = of + 1; id-- > 0;) {
    if (!needed[id])
      continue;
    const ir::Node &node = home.node(id);
    if (!node.loc.harness)
      return id;
    for (ir::NodeId in : node.inputs)
      if (in < id)
        needed[in] = true;
  }
  return std::nullopt;
}

void move_into_analysed_code(const ir::Trace &home, Divergence &divergence,
                             ir::NodeId to) {
  if (!divergence.loc.harness || !divergence.node || to >= home.nodes.size() ||
      *divergence.node > to)
    return;
  auto move_to = [&](ir::NodeId id) {
    const ir::Node &node = home.node(id);
    divergence.loc = node.loc;
    divergence.op = node.op;
    divergence.category = node.category;
    divergence.node = id;
  };
  std::vector<bool> reached(to + 1, false); // ids grow in execution order
  reached[*divergence.node] = true;
  for (ir::NodeId id = *divergence.node + 1; id <= to; ++id) {
    const ir::Node &node = home.node(id);
    reached[id] = std::any_of(node.inputs.begin(), node.inputs.end(),
                              [&](ir::NodeId in) { return in <= to && reached[in]; });
    if (reached[id] && !node.loc.harness)
      return move_to(id);
  }
  // The tree never takes the value back (the recipe finishes it: a gathered
  // ZeRO partition): the tree's last operation on what it is made of.
  if (auto made = last_made_in_analysed_code(home, *divergence.node))
    move_to(*made);
}

std::optional<DistributedValue> gather(CheckContext &context, const ir::Output &ref_out,
                                       RuleCode missing_rule, const std::string &subject,
                                       const std::vector<int> &members) {
  auto &program = context.program;
  DistributedValue value;
  value.reference_shape = ref_out.shape;
  value.reference = ref_out.elements;
  if (static_cast<int>(members.size()) != program.world())
    value.members = members;
  for (int r : members) {
    const ir::Output *o = find_output(program.rank(r), ref_out.path);
    if (!o) {
      // The line comes from the reference, which has the value.
      ir::SourceLoc loc = program.reference().node(ref_out.node).loc;
      context.findings.push_back(Finding::of(
          missing_rule, loc,
          fmt::format("on rank {}, {} is missing; the reference has it", r, subject)));
      return std::nullopt;
    }
    value.rank_shapes.push_back(o->shape);
    value.ranks.push_back(program.linked(r, o->elements));
  }
  for (std::size_t k = 0; k < members.size(); ++k) {
    const ir::Output *o = find_output(program.rank(members[k]), ref_out.path);
    if (!o->owned)
      continue;
    if (value.owned.empty()) // every entry so far answers for every element
      for (std::size_t j = 0; j < members.size(); ++j)
        value.owned.emplace_back(value.ranks[j].size(), true);
    std::vector<bool> &mask = value.owned[k];
    mask.assign(mask.size(), false);
    for (auto [start, end] : *o->owned)
      for (std::size_t i = start; i < end && i < mask.size(); ++i)
        mask[i] = true;
  }
  value.axis_groups = axis_groups(program);
  return value;
}

std::vector<int> all_ranks(const ir::LinkedProgram &program) {
  std::vector<int> ranks(program.world());
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

prover::Verdict prove_layout(CheckContext &context, const LayoutEquation &eq,
                             const std::string &obligation) {
  auto &store = context.store;
  if (auto blocked = blocked_by_rank_local(store, eq))
    return *blocked;
  if (!context.lemmas.empty()) {
    LayoutEquation small = context.lemmas.abstract(eq);
    std::vector<TermId> both = small.lhs;
    both.insert(both.end(), small.rhs.begin(), small.rhs.end());
    std::string key = terms::alpha_key(store, both);
    if (const std::string *earlier = context.lemmas.proved_as(key)) {
      prover::Verdict verdict;
      verdict.kind = prover::Verdict::Kind::Proved;
      verdict.method = "memoized";
      verdict.why =
          fmt::format("the same obligation, up to renaming, as \"{}\"", *earlier);
      return verdict;
    }
    if (!blocked_by_rank_local(store, small)) {
      prover::Verdict verdict = context.prover.prove(store, small.lhs, small.rhs);
      if (verdict.kind == prover::Verdict::Kind::Proved) {
        context.lemmas.remember(key, obligation);
        verdict.method += ", modular";
        return verdict;
      }
    }
  }
  // Unabstracted: the only form that may be refuted.
  return context.prover.prove(store, eq.lhs, eq.rhs);
}

bool check_value(CheckContext &context, const ValueObligation &ob) {
  auto &store = context.store;
  LayoutEquation eq = layout_equation(store, ob.value, ob.layout);
  prover::Verdict verdict = prove_layout(context, eq, ob.name);
  if (verdict.kind == prover::Verdict::Kind::Refuted)
    report_refutation(context, ob, eq, verdict);
  bool proved = verdict.kind == prover::Verdict::Kind::Proved;
  context.obligations.push_back(
      {ob.name, ob.loc, std::move(verdict), ob.role != ir::Output::Role::Forward});
  return proved;
}

} // namespace shardproof::checkers
