// The checks, in the fixed order they run (Alive2 style): what the linker
// found first, then the format of communication, then equivalence.
#include "checkers/check.h"
#include "checkers/check_factories.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace shardproof::checkers {

std::vector<std::unique_ptr<Check>> make_checks(const CheckOptions &options) {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(make_collective_mismatch_check());
  checks.push_back(make_message_deadlock_check()); // matched messages that still hang
  checks.push_back(make_unmatched_parameter_check());
  checks.push_back(make_comm_dtype_check(options.reduce_dtype));
  checks.push_back(make_rng_divergence_check()); // frees reseeded draws: before proofs
  if (options.modular)
    checks.push_back(make_module_equivalence_check());
  checks.push_back(make_forward_equivalence_check());
  checks.push_back(make_gradient_equivalence_check());
  checks.push_back(
      make_exp_overflow_check()); // what the proofs over the reals cannot see
  return checks;
}

void run_checks(CheckContext &context, const CheckOptions &options) {
  for (auto &check : make_checks(options)) {
    std::size_t before = context.findings.size();
    check->run(context);
    auto declared = check->rules();
    for (std::size_t i = before; i < context.findings.size(); ++i)
      if (std::find(declared.begin(), declared.end(), context.findings[i].rule) ==
          declared.end())
        throw std::logic_error(
            fmt::format("check {} reported {}, a rule it does not declare", check->name(),
                        context.findings[i].rule_id()));
  }
}

} // namespace shardproof::checkers
