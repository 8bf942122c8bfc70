// SP003 collective-mismatch and SP004 unmatched-parameter: problems the linker
// found while putting the ranks together.
#include "checkers/check.h"
#include "checkers/equivalence_checks.h"

namespace shardproof::checkers {

namespace {
class CollectiveMismatchCheck final : public Check {
public:
  std::string_view name() const override { return "collective-mismatch"; }
  void run(CheckContext &context) override {
    for (const auto &m : context.program.mismatches()) {
      Finding f = Finding::of(
          "SP003", m.loc_a, m.message + " (the job would hang or mix unrelated tensors)");
      if (!m.loc_b.file.empty())
        f.notes.push_back({m.loc_b, "the other rank's collective is issued here"});
      context.findings.push_back(std::move(f));
    }
  }
};

class UnmatchedParameterCheck final : public Check {
public:
  std::string_view name() const override { return "unmatched-parameter"; }
  void run(CheckContext &context) override {
    for (const auto &u : context.program.unbound()) {
      Finding f = Finding::of("SP004", u.loc, u.message);
      f.details.push_back("obligations that depend on it cannot be proved");
      context.findings.push_back(std::move(f));
    }
  }
};
} // namespace

std::vector<std::unique_ptr<Check>> make_checks(const CheckOptions &options) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(std::make_unique<CollectiveMismatchCheck>());
  checks.push_back(std::make_unique<UnmatchedParameterCheck>());
  checks.push_back(make_comm_dtype_check(options.reduce_dtype));
  checks.push_back(make_forward_equivalence_check());
  checks.push_back(make_gradient_equivalence_check());
  return checks;
}

} // namespace shardproof::checkers
