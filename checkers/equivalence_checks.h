// Factories of the equivalence checks (one class each, in their .cpp files).
#pragma once

#include "checkers/check.h"

namespace shardproof::checkers {

std::unique_ptr<Check> make_forward_equivalence_check();
std::unique_ptr<Check> make_gradient_equivalence_check();

} // namespace shardproof::checkers
