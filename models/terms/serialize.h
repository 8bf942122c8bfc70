// A text form of the part of a term store that some roots reach: one node a
// line, children before parents, so that reading it back into another store
// rebuilds the same DAG. Obligations are dumped in it
// (SHARDPROOF_DUMP_OBLIGATIONS) and replayed by the prover benchmark.
#pragma once

#include "models/terms/term_store.h"

#include <istream>
#include <ostream>
#include <span>
#include <stdexcept>
#include <vector>

namespace shardproof::terms {

// Writes every node the roots reach, then the roots, as the named lists
// ("lhs", "rhs", ...): one `= name id...` line per list. Lines starting with
// '#' are comments.
void write_terms(const TermStore &store,
                 std::span<const std::pair<std::string, std::vector<TermId>>> lists,
                 std::ostream &out);

struct TermLists {
  std::vector<std::pair<std::string, std::vector<TermId>>> lists;
  const std::vector<TermId> &operator[](std::string_view name) const;
};

struct TermFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Rebuilds the nodes into `store` through its constructors; throws
// TermFormatError naming the line of a malformed input.
TermLists read_terms(std::istream &in, TermStore &store);

} // namespace shardproof::terms
