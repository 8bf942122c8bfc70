// Parameter layouts inferred when the declared ones do not reconcile: a
// sharded parameter whose attributes are missing or wrong (Megatron's 2024
// SwiGLU fc1, interleaved without `partition_stride`) makes a correct module
// look refuted. Other strides of the suspect module's parameters are tried on
// the same traces; one under which nothing is refuted is reported as a
// warning (SP011) naming the layout, and the obligations are proved under it.
#pragma once

#include "checkers/check.h"
#include "checkers/finding.h"
#include "models/ir/trace.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::analyzer {

// The findings and obligations of one run of the checks.
struct CheckRun {
  std::vector<checkers::Finding> findings;
  std::vector<checkers::ObligationResult> obligations;
  bool refutes() const;
};

// Links `ranks` (with the reference the caller holds) and runs the checks.
using RunChecks = std::function<CheckRun(const std::vector<ir::Trace> &ranks)>;

struct InferredLayout {
  std::string parameter; // a rank's qualified name
  int dim = 0;
  int declared_stride = 1;
  int stride = 1;
  ir::SourceLoc loc; // where the parameter is created
};

struct LayoutInference {
  std::vector<InferredLayout> layouts;
  CheckRun run; // the checks under those layouts: nothing refuted
};

// When `first` refutes the gradient of a sharded parameter, tries strides 2
// to 4 for that module's sharded parameters, one module at a time and at most
// `max_tries` runs in all, keeping a stride when it lowers the number of
// refuted obligations. Returns the layouts once nothing is refuted; nullopt
// when no tried layout gets there (the refutation then stands).
std::optional<LayoutInference> infer_parameter_layouts(std::vector<ir::Trace> ranks,
                                                       const CheckRun &first,
                                                       const RunChecks &run,
                                                       int max_tries = 6);

// The SP011 warning for `layout`.
checkers::Finding inferred_layout_finding(const InferredLayout &layout);

// A parameter of another shape than the reference's that nothing binds to
// its shard (no partition_dim, no framework metadata, no slice of a whole
// the entry made: picotron's zeroed column-parallel bias) is tried at every
// (dim, stride) its shape fits, on the same traces; where exactly one
// choice leaves fewer obligations unproved than none and refutes nothing,
// the parameter is bound so (the unique shard that makes the trace
// consistent), reported as an SP011 warning. Several such choices, or none,
// leave it unmatched. At most `max_tries` runs in all.
struct BoundByTrace {
  std::vector<ir::Trace> ranks; // the traces with the bindings chosen
  std::vector<checkers::Finding> notes;
};
std::optional<BoundByTrace>
bind_unmatched_parameters(std::vector<ir::Trace> ranks, const ir::Trace &reference,
                          const CheckRun &first, const RunChecks &run, int max_tries = 8);

} // namespace shardproof::analyzer
