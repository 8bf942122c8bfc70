// SP001 forward-mismatch (and SP002/SP005 when the cause is a missing
// reduction or a wrong scale): every output of the entry equals the reference
// output, replicated or sharded, for all inputs.
#include "checkers/check.h"
#include "checkers/value_check.h"

#include <fmt/format.h>

namespace shardproof::checkers {

namespace {
class ForwardEquivalenceCheck final : public Check {
public:
  std::string_view name() const override { return "forward-equivalence"; }
  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {
        RuleCode::ForwardMismatch, RuleCode::MissingReduction, RuleCode::WrongScaling,
        RuleCode::RngDivergence};
    return kEmits;
  }

  void run(CheckContext &context) override {
    for (const ir::Output &out : context.program.reference().outputs)
      if (out.role == ir::Output::Role::Forward)
        check_output(context, out);
  }

private:
  void check_output(CheckContext &context, const ir::Output &ref_out) {
    std::string subject = fmt::format("output '{}'", ref_out.path);
    auto value = gather(context, ref_out, RuleCode::ForwardMismatch, subject,
                        all_ranks(context.program));
    if (!value)
      return;
    const ir::Output *rank0 = find_output(context.program.rank(0), ref_out.path);
    ir::SourceLoc loc = context.program.rank(0).node(rank0->node).loc;
    // Any acceptable layout will do: the one the values show, else the one a
    // correct program would give this shape.
    Layout inferred = infer_layout(context.store, *value, context.seeds());
    std::optional<Layout> target =
        inferred.acceptable() ? inferred : expected_layout(*value);
    if (!target) {
      // No layout can relate the shapes: no obligation to prove, but the
      // finding still points at the operation that went wrong.
      auto divergence = locate_divergence(context.store, context.program, 0, rank0->node,
                                          Layout{}, context.seeds());
      Finding f = Finding::of(
          RuleCode::ForwardMismatch, divergence ? divergence->loc : loc,
          fmt::format("{} has shape {} on rank 0 but {} in the reference, which no "
                      "sharding explains",
                      subject, ir::shape_str(value->rank_shapes[0]),
                      ir::shape_str(ref_out.shape)));
      if (divergence && !(divergence->loc == loc))
        f.notes.push_back({loc, fmt::format("{} is returned here", subject)});
      context.findings.push_back(std::move(f));
      return;
    }
    ValueObligation ob;
    ob.name = fmt::format("forward: '{}' is {}", ref_out.path, target->str());
    ob.subject = subject;
    ob.element_prefix = ref_out.path;
    ob.value = std::move(*value);
    ob.layout = *target;
    ob.loc = loc;
    ob.loc_note = fmt::format("{} is returned here", subject);
    ob.home_node = rank0->node;
    check_value(context, ob);
  }
};
} // namespace

std::unique_ptr<Check> make_forward_equivalence_check() {
  return std::make_unique<ForwardEquivalenceCheck>();
}

} // namespace shardproof::checkers
