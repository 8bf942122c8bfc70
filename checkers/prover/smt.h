// The Z3 back end: a small encoder from terms to Z3 reals. Functions are
// uninterpreted (sound for proofs: an identity that holds for every
// interpretation holds for the real one); inv(x) is ite(x = 0, 0, 1/x).
#pragma once

#include "models/terms/term_store.h"

#include <span>
#include <string>
#include <utility>
#include <vector>

namespace shardproof::prover {

struct SmtAnswer {
  enum class Result { Unsat, Sat, Unknown };
  Result result = Result::Unknown;
  // For Sat: a value for every variable of the query (Z3 rationals).
  std::vector<std::pair<terms::TermId, mpq_class>> model;
  std::string reason; // Z3's own words for Unknown; informational only
};

// Asks whether some assignment makes any pair differ.
SmtAnswer find_disequality(const terms::TermStore &store,
                           std::span<const std::pair<terms::TermId, terms::TermId>> pairs,
                           unsigned timeout_ms);

std::string encode_answer(const SmtAnswer &answer);
SmtAnswer decode_answer(const std::string &text);

} // namespace shardproof::prover
