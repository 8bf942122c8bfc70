// SP006 gradient-mismatch and SP007 replica-divergence (and SP002/SP005 for
// a missing reduction or a wrong scale): after backward and finalize_grads,
// every parameter holds its share of the reference gradient and every input
// its gradient, for all inputs and weights.
#include "checkers/check.h"
#include "checkers/check_factories.h"
#include "checkers/value_check.h"

#include <fmt/format.h>

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

  void run(CheckContext &context) override {
    for (const ir::Output &out : context.program.reference().outputs)
      if (out.role != ir::Output::Role::Forward)
        check_gradient(context, out);
  }

private:
  void check_gradient(CheckContext &context, const ir::Output &ref_out) {
    bool parameter = ref_out.role == ir::Output::Role::ParameterGrad;
    std::string subject =
        parameter ? fmt::format("the gradient of parameter '{}'", ref_out.subject)
                  : fmt::format("the gradient of {}", ref_out.subject);
    auto value = gather(context, ref_out, "SP006", subject);
    if (!value)
      return;
    const ir::Trace &rank0 = context.program.rank(0);
    const ir::Output *out0 = find_output(rank0, ref_out.path);

    ValueObligation ob;
    ob.subject = subject;
    ob.element_prefix = ref_out.path;
    ob.role = ref_out.role;
    ob.rank0_node = out0->node;
    ob.loc = rank0.node(out0->node).loc;
    if (parameter) {
      // The gradient must be laid out as the parameter is: its shard, or
      // whole and equal on every rank.
      const ir::Leaf *leaf = find_parameter(rank0, ref_out.subject);
      bool sharded = leaf && leaf->partition_dim >= 0 && leaf->shape != ref_out.shape;
      ob.layout = sharded ? Layout{Layout::Kind::Sharded, leaf->partition_dim,
                                   leaf->partition_stride}
                          : Layout{Layout::Kind::Replicated};
      ob.replicated_parameter = !sharded;
      if (leaf && !leaf->loc.file.empty()) {
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
    ob.name = fmt::format("gradient: '{}' is {}", ref_out.subject, ob.layout.str());
    ob.value = std::move(*value);
    check_value(context, ob);
  }
};
} // namespace

std::unique_ptr<Check> make_gradient_equivalence_check() {
  return std::make_unique<GradientEquivalenceCheck>();
}

} // namespace shardproof::checkers
