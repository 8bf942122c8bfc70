// One factory per check; each check is one class in its own .cpp file.
#pragma once

#include "checkers/check.h"

#include <optional>

namespace shardproof::checkers {

std::unique_ptr<Check> make_collective_mismatch_check();
std::unique_ptr<Check> make_message_deadlock_check();
std::unique_ptr<Check> make_unmatched_parameter_check();
std::unique_ptr<Check> make_rng_divergence_check();
std::unique_ptr<Check> make_module_equivalence_check();
std::unique_ptr<Check> make_forward_equivalence_check();
std::unique_ptr<Check> make_gradient_equivalence_check();
std::unique_ptr<Check> make_exp_overflow_check();
// reduce_dtype: the precision the configuration asks reductions to use.
std::unique_ptr<Check> make_comm_dtype_check(std::optional<ir::DType> reduce_dtype);

} // namespace shardproof::checkers
