// Modular decomposition: at every module boundary of the forward, the values
// that cross it (the module's inputs, then its outputs) are related to the
// reference's by layout inference, the layout is proved with everything
// proved before abstracted (lemmas.h), and the value becomes a lemma that
// later obligations use. Modules are visited as they returned, so a module's
// submodules are proved before it; identical layers give obligations equal
// up to renaming, proved once. Then the backward: the gradient each module's
// output received, from the last module to the first, as the backward runs,
// so that every layer's parameter gradients see the same abstract gradient
// from above.
//
// A boundary whose layout is neither replicated nor sharded (a partial sum a
// parent reduces, a value that went wrong) yields no lemma and no finding
// here: the whole-output checks that follow report what reaches an output.
#include "checkers/check.h"
#include "checkers/check_factories.h"
#include "checkers/value_check.h"

#include <fmt/format.h>

#include <map>

namespace shardproof::checkers {

namespace {
using Calls = std::vector<const ir::ModuleCall *>;

// The calls of one trace by (module name, occurrence).
std::map<std::pair<std::string, int>, const ir::ModuleCall *>
calls_by_name(const ir::Trace &trace) {
  std::map<std::pair<std::string, int>, const ir::ModuleCall *> out;
  std::map<std::string, int> seen;
  for (const ir::ModuleCall &call : trace.module_calls)
    out[{call.name, seen[call.name]++}] = &call;
  return out;
}

class ModuleEquivalenceCheck final : public Check {
public:
  std::string_view name() const override { return "module-equivalence"; }
  std::span<const RuleCode> rules() const override { return {}; } // no findings

  void run(CheckContext &context) override {
    auto &program = context.program;
    std::vector<std::map<std::pair<std::string, int>, const ir::ModuleCall *>> ranks;
    for (int r = 0; r < program.world(); ++r)
      ranks.push_back(calls_by_name(program.rank(r)));
    // Every reference call with its twin on every rank.
    std::vector<std::pair<const ir::ModuleCall *, Calls>> matched;
    std::map<std::string, int> seen;
    for (const ir::ModuleCall &ref : program.reference().module_calls) {
      std::pair<std::string, int> key{ref.name, seen[ref.name]++};
      Calls twins;
      for (const auto &calls : ranks) {
        auto it = calls.find(key);
        if (it == calls.end() || it->second->inputs.size() != ref.inputs.size() ||
            it->second->outputs.size() != ref.outputs.size())
          break;
        twins.push_back(it->second);
      }
      if (static_cast<int>(twins.size()) == program.world())
        matched.push_back({&ref, std::move(twins)});
    }
    for (const auto &[ref, twins] : matched) {
      for (std::size_t k = 0; k < ref->inputs.size(); ++k)
        check_boundary(context, *ref, twins, k, Crossing::Input);
      for (std::size_t k = 0; k < ref->outputs.size(); ++k)
        check_boundary(context, *ref, twins, k, Crossing::Output);
    }
    for (auto it = matched.rbegin(); it != matched.rend(); ++it)
      for (std::size_t k = 0; k < it->first->outputs.size(); ++k)
        check_boundary(context, *it->first, it->second, k, Crossing::OutputGradient);
  }

private:
  enum class Crossing { Input, Output, OutputGradient };

  void check_boundary(CheckContext &context, const ir::ModuleCall &ref,
                      const Calls &twins, std::size_t k, Crossing crossing) {
    auto value_of = [&](const ir::ModuleCall &call) -> const ir::ModuleCall::Value & {
      return crossing == Crossing::Input    ? call.inputs[k]
             : crossing == Crossing::Output ? call.outputs[k]
                                            : call.output_gradients[k];
    };
    DistributedValue value;
    value.reference_shape = value_of(ref).shape;
    value.reference = value_of(ref).elements;
    for (int r = 0; r < static_cast<int>(twins.size()); ++r) {
      if (value_of(*twins[r]).elements.empty())
        return; // no gradient reached it on this rank
      value.rank_shapes.push_back(value_of(*twins[r]).shape);
      value.ranks.push_back(context.program.linked(r, value_of(*twins[r]).elements));
    }
    value.axis_groups = axis_groups(context.program);
    if (value.reference.empty() || context.lemmas.abstracted(value))
      return;
    Layout layout = infer_layout(context.store, value, context.seeds());
    if (!layout.acceptable())
      return;
    std::string what = fmt::format("module '{}' ({}): {} {}", ref.name, ref.type_name,
                                   crossing == Crossing::Input    ? "input"
                                   : crossing == Crossing::Output ? "output"
                                                                  : "gradient of output",
                                   k);
    std::string name = fmt::format("{} is {}", what, layout.str());
    prover::Verdict verdict =
        prove_layout(context, layout_equation(context.store, value, layout), name);
    // Only a proved boundary is a lemma; one not proved is left to the
    // whole-output checks, which alone may refute.
    if (verdict.kind != prover::Verdict::Kind::Proved)
      return;
    context.lemmas.add(value, layout, what);
    context.obligations.push_back({name, ref.loc, std::move(verdict)});
  }
};
} // namespace

std::unique_ptr<Check> make_module_equivalence_check() {
  return std::make_unique<ModuleEquivalenceCheck>();
}

} // namespace shardproof::checkers
