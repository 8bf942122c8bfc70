// The witness of a path. A value-dependent decision (topk, argmax, sort, a
// mask from a comparison) cannot be followed for every input at once, so
// every run of one target makes it at one shared point: each variable valued
// by its name and the path's seed. Names are the reference's (a rank's leaf
// element takes the name of the reference element the linker binds it to:
// its shard of a parameter, its slice of an input), so ranks deciding
// from values equal to the reference's decide as it does. The point satisfies
// every decision made at it: the path it takes is feasible, and a difference
// found there is a real one.
#pragma once

#include "models/terms/term_store.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardproof::terms {

// The value of the variable named `name` at the witness of path `seed`: a
// pseudo-random real in [-2, 2), the same in every process.
double witness_value(std::uint64_t seed, std::string_view name);

struct Witness {
  std::uint64_t seed = 1;
  // Values by name that a solver chose (an input no path checked so far
  // takes); every other variable is valued by the seed.
  std::map<std::string, double, std::less<>> values;

  double value(std::string_view name) const {
    auto it = values.find(name);
    return it != values.end() ? it->second : witness_value(seed, name);
  }
};

// A variable's name at the witness where it is not its own (a rank's shard
// element takes the reference element it holds).
using WitnessNames = std::unordered_map<TermId, std::string>;
// The values at the witness of collective results, by placeholder name, that
// an earlier tracing pass linked: a result has no value of its own.
using KnownPlaceholderValues = std::map<std::string, double, std::less<>>;

// The values of `roots` at `witness`; nullopt when one reads a value that
// has none there (an unmodelled value, a collective's result not in
// `placeholders`) or is NaN.
std::optional<std::vector<double>>
values_at_witness(const TermStore &store, std::span<const TermId> roots,
                  const Witness &witness, const WitnessNames &names,
                  const KnownPlaceholderValues &placeholders);

} // namespace shardproof::terms
