// SP004 unmatched-parameter: a rank's parameter the linker could not relate
// to the reference (its variables stay free, so proofs needing it fail).
#include "checkers/check.h"
#include "checkers/check_factories.h"

namespace shardproof::checkers {

namespace {
class UnmatchedParameterCheck final : public Check {
public:
  std::string_view name() const override { return "unmatched-parameter"; }
  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {RuleCode::UnmatchedParameter};
    return kEmits;
  }
  void run(CheckContext &context) override {
    for (const auto &u : context.program.unbound()) {
      Finding f = Finding::of(RuleCode::UnmatchedParameter, u.loc, u.message);
      f.details.push_back("obligations that depend on it cannot be proved");
      context.findings.push_back(std::move(f));
    }
  }
};
} // namespace

std::unique_ptr<Check> make_unmatched_parameter_check() {
  return std::make_unique<UnmatchedParameterCheck>();
}

} // namespace shardproof::checkers
