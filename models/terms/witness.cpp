#include "models/terms/witness.h"

#include "models/terms/evaluate.h"

#include <cmath>

namespace shardproof::terms {

namespace {
// SplitMix64's finaliser: a good spread of FNV's weak low bits.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
} // namespace

double witness_value(std::uint64_t seed, std::string_view name) {
  std::uint64_t hash = 0xcbf29ce484222325ULL; // FNV-1a
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  std::uint64_t bits = mix(hash ^ mix(seed + 0x9e3779b97f4a7c15ULL));
  // 53 random bits: a double in [0, 1), then [-2, 2).
  return static_cast<double>(bits >> 11) * 0x1.0p-53 * 4.0 - 2.0;
}

std::optional<std::vector<double>>
values_at_witness(const TermStore &store, std::span<const TermId> roots,
                  const Witness &witness, const WitnessNames &names,
                  const KnownPlaceholderValues &placeholders) {
  // Checked first: NaN would not survive every operation (a comparison).
  for (TermId v : variables_of(store, roots)) {
    const Variable &variable = store.variable(v);
    if (variable.kind == VarKind::Opaque ||
        (variable.kind == VarKind::Placeholder && !placeholders.contains(variable.name)))
      return std::nullopt;
  }
  DoubleEvaluator eval(store, [&](TermId v) {
    const Variable &variable = store.variable(v);
    if (variable.kind == VarKind::Placeholder)
      return placeholders.find(variable.name)->second;
    auto named = names.find(v);
    return witness.value(named != names.end() ? std::string_view(named->second)
                                              : std::string_view(variable.name));
  });
  std::vector<double> out;
  out.reserve(roots.size());
  for (TermId t : roots) {
    auto value = eval(t);
    if (!value || std::isnan(*value))
      return std::nullopt;
    out.push_back(*value);
  }
  return out;
}

} // namespace shardproof::terms
