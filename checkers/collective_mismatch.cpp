// SP003 collective-mismatch: collective sequences the linker could not match
// across a group (on hardware, a hang or unrelated tensors mixed).
#include "checkers/check.h"
#include "checkers/check_factories.h"

namespace shardproof::checkers {

namespace {
class CollectiveMismatchCheck final : public Check {
public:
  std::string_view name() const override { return "collective-mismatch"; }
  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {RuleCode::CollectiveMismatch};
    return kEmits;
  }
  void run(CheckContext &context) override {
    for (const auto &m : context.program.mismatches()) {
      Finding f = Finding::of(
          RuleCode::CollectiveMismatch, m.loc_a, m.message + " (the job would hang or mix unrelated tensors)");
      if (!m.loc_b.file.empty())
        f.notes.push_back({m.loc_b, "the other rank's collective is issued here"});
      context.findings.push_back(std::move(f));
    }
  }
};
} // namespace

std::unique_ptr<Check> make_collective_mismatch_check() {
  return std::make_unique<CollectiveMismatchCheck>();
}

} // namespace shardproof::checkers
