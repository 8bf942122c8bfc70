// SP006 gradient-mismatch and SP007 replica-divergence (and SP002/SP005 for
// a missing reduction or a wrong scale): after backward and finalize_grads,
// every parameter holds its share of the reference gradient and every input
// its gradient, for all inputs and weights; after the entry's optimizer step,
// every parameter holds its share of the reference's updated parameter; the
// gradient norm an entry computes for clipping is the reference's on every
// rank (a wrong one rescales every step, differently per rank).
#include "checkers/check.h"
#include "checkers/check_factories.h"
#include "checkers/value_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace shardproof::checkers {

namespace {
const ir::Leaf *find_parameter(const ir::Trace &trace, const std::string &name) {
  for (const ir::Leaf &leaf : trace.leaves)
    if (leaf.role == ir::LeafRole::Parameter && leaf.name == name)
      return &leaf;
  return nullptr;
}

class GradientEquivalenceCheck final : public Check {
public:
  std::string_view name() const override { return "gradient-equivalence"; }
  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {
        RuleCode::GradientMismatch, RuleCode::MissingReduction, RuleCode::WrongScaling,
        RuleCode::ReplicaDivergence, RuleCode::RngDivergence};
    return kEmits;
  }

  void run(CheckContext &context) override {
    for (const ir::Output &out : context.program.reference().outputs)
      if (out.role == ir::Output::Role::GradientNorm)
        check_gradient_norm(context, out);
      else if (out.role != ir::Output::Role::Forward)
        check_gradient(context, out);
    report_outputs_only_ranks_have(context);
  }

private:
  // A gradient or an updated parameter that a rank has and the reference
  // has not (its backward never reached the parameter, or its step left it
  // as it was) is compared with nothing: "could not prove", naming it, never
  // a silent pass.
  static void report_outputs_only_ranks_have(CheckContext &context) {
    const ir::Trace &reference = context.program.reference();
    std::set<std::string> reported;
    for (int r : all_ranks(context.program))
      for (const ir::Output &out : context.program.rank(r).outputs) {
        if (out.role == ir::Output::Role::Forward || find_output(reference, out.path) ||
            !reported.insert(out.path).second)
          continue;
        const bool stepped = out.role == ir::Output::Role::ParameterAfterStep;
        prover::Verdict verdict;
        verdict.why = fmt::format(
            "rank {} {} '{}' and the reference does not, so it is compared with nothing",
            r, stepped ? "updates parameter" : "has a gradient of", out.subject);
        context.obligations.push_back(
            {fmt::format("{}: '{}' has no counterpart in the reference",
                         stepped ? "step" : "gradient", out.subject),
             context.program.rank(r).node(out.node).loc, std::move(verdict), true});
      }
  }

  void check_gradient_norm(CheckContext &context, const ir::Output &ref_out) {
    const std::string subject = "the gradient norm";
    auto value = gather(context, ref_out, RuleCode::GradientMismatch, subject,
                        all_ranks(context.program));
    if (!value)
      return;
    const ir::Output *rank0 = find_output(context.program.rank(0), ref_out.path);
    ValueObligation ob;
    ob.name = "grad_norm: the norm is replicated";
    ob.subject = subject;
    ob.element_prefix = ref_out.path;
    ob.role = ref_out.role;
    ob.home_node = rank0->node;
    ob.loc = context.program.rank(0).node(rank0->node).loc;
    ob.loc_note = "rank 0's gradient norm is computed here";
    ob.layout = Layout{Layout::Kind::Replicated};
    ob.must_agree = true;
    ob.value = std::move(*value);
    prove_as_lemma(context, ob);
  }

  // A proved gradient (or norm) is a lemma for what the step computes from
  // it: the norm sums the gradients' squares, the step scales them by the
  // clipping coefficient, and both stay small with them abstracted.
  static void prove_as_lemma(CheckContext &context, const ValueObligation &ob) {
    if (check_value(context, ob))
      context.lemmas.add(ob.value, ob.layout, ob.name);
  }

  // "Could not prove" for a gradient some of whose elements no rank holds
  // reduced: nothing checks them. Returns whether it reported one.
  static bool report_unowned(CheckContext &context, const ValueObligation &ob) {
    LayoutEquation eq = layout_equation(context.store, ob.value, ob.layout);
    std::vector<bool> covered(ob.value.reference.size(), false);
    for (const LayoutEquation::Row &row : eq.rows)
      covered[row.reference] = true;
    auto gap = std::find(covered.begin(), covered.end(), false);
    if (gap == covered.end())
      return false;
    prover::Verdict verdict;
    verdict.why = fmt::format("no rank holds element {} of {} reduced (each rank "
                              "answers for its shard only), so nothing checks it",
                              gap - covered.begin(), ob.subject);
    context.obligations.push_back({ob.name, ob.loc, std::move(verdict), true});
    return true;
  }

  void check_gradient(CheckContext &context, const ir::Output &ref_out) {
    const bool stepped = ref_out.role == ir::Output::Role::ParameterAfterStep;
    const bool parameter = stepped || ref_out.role == ir::Output::Role::ParameterGrad;
    std::string subject =
        stepped ? fmt::format("parameter '{}' after the optimizer step", ref_out.subject)
        : parameter ? fmt::format("the gradient of parameter '{}'", ref_out.subject)
                    : fmt::format("the gradient of {}", ref_out.subject);
    // A parameter's gradient is checked on the ranks that hold the
    // parameter: an expert lives on its expert-parallel ranks only.
    std::vector<int> members = all_ranks(context.program);
    if (parameter)
      std::erase_if(members, [&](int r) {
        return !find_parameter(context.program.rank(r), ref_out.subject);
      });
    if (members.empty()) {
      context.findings.push_back(Finding::of(
          RuleCode::GradientMismatch, context.program.reference().node(ref_out.node).loc,
          fmt::format("no rank holds parameter '{}'; the reference has it and its "
                      "gradient",
                      ref_out.subject)));
      return;
    }
    auto value = gather(context, ref_out, RuleCode::GradientMismatch, subject, members);
    if (!value)
      return;
    const ir::Trace &home = context.program.rank(members[0]);
    const ir::Output *home_out = find_output(home, ref_out.path);

    ValueObligation ob;
    ob.subject = subject;
    ob.element_prefix = ref_out.path;
    ob.role = ref_out.role;
    ob.home_rank = members[0];
    ob.home_node = home_out->node;
    ob.loc = home.node(home_out->node).loc;
    if (parameter) {
      // The gradient must be laid out as the parameter is: its shard (over
      // the tensor-parallel group), or whole and equal on every rank.
      const ir::Leaf *leaf = find_parameter(home, ref_out.subject);
      bool sharded = leaf && leaf->partition_dim >= 0 && leaf->shape != ref_out.shape;
      // A parameter of another shape that no partition explains is unmatched
      // (SP004, its variables free): no obligation on its gradient can hold.
      if (leaf && !sharded && value->rank_shapes[0] != ref_out.shape)
        return;
      ob.layout = Layout{Layout::Kind::Replicated};
      if (sharded)
        ob.layout = Layout{Layout::Kind::Sharded,
                           value->has_axis(Layout::Over::TensorParallel)
                               ? Layout::Over::TensorParallel
                               : Layout::Over::World,
                           leaf->partition_dim, leaf->partition_stride};
      ob.must_agree = !sharded;
      // A gradient is reported where its parameter is made; a stepped
      // parameter where the step last wrote it.
      if (leaf && !leaf->loc.file.empty() && !stepped) {
        ob.loc = leaf->loc;
        ob.loc_note = fmt::format("parameter '{}' is created here", ref_out.subject);
      }
    } else {
      // Only an input handed to the model whole must get its whole gradient:
      // a rank's slice of a batch is scaled by the rank's own loss (a local
      // mean), which is how data parallelism works.
      if (value->rank_shapes[0] != ref_out.shape)
        return;
      ob.layout = Layout{Layout::Kind::Replicated};
    }
    ob.name = fmt::format("{}: '{}' is {}", stepped ? "step" : "gradient",
                          ref_out.subject, ob.layout.str());
    ob.value = std::move(*value);
    if (!ob.value.owned.empty()) {
      // Each rank answers for its own elements only (a distributed
      // optimizer's shard): the replicas differ elsewhere, and together
      // they must answer for every element.
      ob.must_agree = false;
      ob.name += " (each element where its rank holds it reduced)";
      if (report_unowned(context, ob))
        return;
    }
    if (stepped)
      check_value(context, ob);
    else
      prove_as_lemma(context, ob);
  }
};
} // namespace

std::unique_ptr<Check> make_gradient_equivalence_check() {
  return std::make_unique<GradientEquivalenceCheck>();
}

} // namespace shardproof::checkers
