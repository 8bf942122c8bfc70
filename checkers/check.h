// A check is one small class (clang-tidy style) that turns the linked program
// into obligations and findings. make_checks() lists them in the fixed order
// they run (Alive2 style): structural problems first, then equivalence.
#pragma once

#include "checkers/finding.h"
#include "checkers/lemmas.h"
#include "checkers/prover/prover.h"
#include "checkers/rules.h"
#include "models/ir/linker.h"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace shardproof::checkers {

struct ObligationResult {
  std::string name; // "forward: out is replicated"
  ir::SourceLoc loc;
  prover::Verdict verdict;
  // Whether it is about the step's backward half (a gradient, the gradient
  // norm, an updated parameter): a summary says how many are, so a target
  // proved on its forward alone is never mistaken for a checked step.
  bool on_gradients = false;
};

// A rank's random draw that the reference makes from another seed
// (rng_divergence.cpp): refutations that depend on it are reported there.
struct RandomDivergence {
  ir::SourceLoc loc;
  std::string message;
};

struct CheckContext {
  terms::TermStore &store;
  ir::LinkedProgram &program;
  prover::Prover &prover; // every obligation goes through it
  std::vector<Finding> findings;
  std::vector<ObligationResult> obligations;
  Lemmas lemmas; // proved values that later obligations abstract
  std::map<terms::TermId, RandomDivergence> random_divergences; // by draw element

  // Every pseudo-random seed, from the prover's options.
  const prover::Seeds &seeds() const { return prover.options().seeds; }
};

class Check {
public:
  virtual ~Check() = default;
  virtual std::string_view name() const = 0;
  // The rules its findings may have (the session rejects any other).
  virtual std::span<const RuleCode> rules() const = 0;
  virtual void run(CheckContext &context) = 0;
};

struct CheckOptions {
  std::optional<ir::DType> reduce_dtype; // --reduce-dtype
  bool modular = true;                   // module-boundary lemmas (--no-modular)
};

std::vector<std::unique_ptr<Check>> make_checks(const CheckOptions &options);

// Runs make_checks(options) in order on `context`. A finding of a rule its
// check does not declare is our bug: std::logic_error.
void run_checks(CheckContext &context, const CheckOptions &options);

} // namespace shardproof::checkers
