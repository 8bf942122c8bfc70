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

// A reference call and its twins, on every rank or on `members` only.
struct Match {
  const ir::ModuleCall *ref;
  Calls twins;
  std::vector<int> members; // empty: every rank, in order
};

class ModuleEquivalenceCheck final : public Check {
public:
  std::string_view name() const override { return "module-equivalence"; }
  std::span<const RuleCode> rules() const override { return {}; } // no findings

  void run(CheckContext &context) override {
    auto &program = context.program;
    std::vector<std::map<std::pair<std::string, int>, const ir::ModuleCall *>> ranks;
    for (int r = 0; r < program.world(); ++r)
      ranks.push_back(calls_by_name(program.rank(r)));
    // Every reference call with its twin on each rank that makes it: every
    // rank, or only some (a pipeline stage's layers, an expert-parallel
    // rank's experts), whose names the entry maps to the reference's.
    std::vector<Match> matched;
    std::map<std::string, int> seen;
    for (const ir::ModuleCall &ref : program.reference().module_calls) {
      std::pair<std::string, int> key{ref.name, seen[ref.name]++};
      Match match{&ref, {}, {}};
      bool fits = true;
      for (int r = 0; r < program.world() && fits; ++r) {
        auto it = ranks[r].find(key);
        if (it == ranks[r].end())
          continue;
        fits = it->second->inputs.size() == ref.inputs.size() &&
               it->second->outputs.size() == ref.outputs.size();
        match.twins.push_back(it->second);
        match.members.push_back(r);
      }
      if (!fits || match.twins.empty())
        continue;
      if (static_cast<int>(match.twins.size()) == program.world())
        match.members.clear();
      matched.push_back(std::move(match));
    }
    for (const Match &m : matched) {
      for (std::size_t k = 0; k < m.ref->inputs.size(); ++k)
        check_boundary(context, m, k, Crossing::Input);
      for (std::size_t k = 0; k < m.ref->outputs.size(); ++k)
        check_boundary(context, m, k, Crossing::Output);
    }
    for (auto it = matched.rbegin(); it != matched.rend(); ++it)
      for (std::size_t k = 0; k < it->ref->outputs.size(); ++k)
        check_boundary(context, *it, k, Crossing::OutputGradient);
  }

private:
  enum class Crossing { Input, Output, OutputGradient };

  void check_boundary(CheckContext &context, const Match &match, std::size_t k,
                      Crossing crossing) {
    const ir::ModuleCall &ref = *match.ref;
    const Calls &twins = match.twins;
    auto value_of = [&](const ir::ModuleCall &call) -> const ir::ModuleCall::Value & {
      return crossing == Crossing::Input    ? call.inputs[k]
             : crossing == Crossing::Output ? call.outputs[k]
                                            : call.output_gradients[k];
    };
    DistributedValue value;
    value.reference_shape = value_of(ref).shape;
    value.reference = value_of(ref).elements;
    value.members = match.members;
    for (int i = 0; i < static_cast<int>(twins.size()); ++i) {
      if (value_of(*twins[i]).elements.empty())
        return; // no gradient reached it on this rank
      value.rank_shapes.push_back(value_of(*twins[i]).shape);
      value.ranks.push_back(
          context.program.linked(value.rank_id(i), value_of(*twins[i]).elements));
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
