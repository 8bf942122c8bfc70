// SP009 rng-divergence: a random draw (a dropout mask, a jitter) that a rank
// makes from another generator state than the single-device run makes at the
// same place.
//
// Draws are leaves named by their key (models/python/torch/random.py):
// "rng:OP:KIND=SEED/COUNT.DIGEST:SHAPE:DTYPE". The linker binds a rank's
// draw to the reference's of the same name; one left unbound is the rank's own
// value, which blocks every proof that needs it. This check pairs each
// unbound draw with the reference's draw at the same source line (the k-th
// there, of the same op, shape, dtype and generator kind). When the two were
// seeded differently, PyTorch draws unrelated values on the rank and in the
// reference: the rank's draw becomes a free value (a proof that holds for
// every value of it holds for the one drawn), and a refuted obligation that
// depends on it is reported under SP009 at the draw. Equal seeds at another
// offset (other draws came first) stay blocked: PyTorch's offsets depend on
// the sizes of earlier draws and on the device, so such draws are neither
// the same nor known to differ.
#include "checkers/check.h"
#include "checkers/check_factories.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <tuple>

namespace shardproof::checkers {

namespace {

struct DrawKey {
  std::string op, kind, seed, offset, shape, dtype;
};

std::optional<DrawKey> parse_draw(const std::string &name) {
  // rng : op : kind=seed/offset : shape : dtype
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t colon; (colon = name.find(':', start)) != std::string::npos;
       start = colon + 1)
    parts.push_back(name.substr(start, colon - start));
  parts.push_back(name.substr(start));
  if (parts.size() != 5 || parts[0] != "rng")
    return std::nullopt;
  auto eq = parts[2].find('='), slash = parts[2].find('/');
  if (eq == std::string::npos || slash == std::string::npos || slash < eq)
    return std::nullopt;
  return DrawKey{parts[1],
                 parts[2].substr(0, eq),
                 parts[2].substr(eq + 1, slash - eq - 1),
                 parts[2].substr(slash + 1),
                 parts[3],
                 parts[4]};
}

using Site = std::tuple<std::string, int>;

// The random draws of a trace by source line, in the order they were made.
std::map<Site, std::vector<const ir::Leaf *>> draws_by_site(const ir::Trace &trace) {
  std::map<Site, std::vector<const ir::Leaf *>> sites;
  for (const ir::Leaf &leaf : trace.leaves)
    if (leaf.role == ir::LeafRole::Input && parse_draw(leaf.name))
      sites[{leaf.loc.file, leaf.loc.line}].push_back(&leaf);
  return sites;
}

bool has_counterpart(const ir::Trace &reference, const ir::Leaf &leaf) {
  for (const ir::Leaf &ref : reference.leaves)
    if (ref.role == leaf.role && ref.name == leaf.name && ref.shape == leaf.shape)
      return true;
  return false;
}

class RngDivergenceCheck final : public Check {
public:
  std::string_view name() const override { return "rng-divergence"; }
  std::span<const RuleCode> rules() const override { return {}; } // no findings

  void run(CheckContext &context) override {
    const ir::Trace &reference = context.program.reference();
    auto reference_sites = draws_by_site(reference);
    for (int r = 0; r < context.program.world(); ++r) {
      for (const auto &[site, draws] : draws_by_site(context.program.rank(r))) {
        auto ref_it = reference_sites.find(site);
        for (std::size_t k = 0; k < draws.size(); ++k) {
          const ir::Leaf &draw = *draws[k];
          if (has_counterpart(reference, draw) || ref_it == reference_sites.end() ||
              k >= ref_it->second.size())
            continue;
          free_if_reseeded(context, r, draw, *ref_it->second[k]);
        }
      }
    }
  }

private:
  static void free_if_reseeded(CheckContext &context, int rank, const ir::Leaf &draw,
                               const ir::Leaf &ref_draw) {
    DrawKey mine = *parse_draw(draw.name), theirs = *parse_draw(ref_draw.name);
    if (mine.op != theirs.op || mine.kind != theirs.kind || mine.shape != theirs.shape ||
        mine.dtype != theirs.dtype || mine.seed == theirs.seed ||
        draw.shape != ref_draw.shape)
      return;
    RandomDivergence divergence{
        draw.loc,
        fmt::format("the random draw here ({}) uses rank {}'s {} generator seeded {} "
                    "where the single-device run's is seeded {}",
                    mine.op, rank, mine.kind, mine.seed, theirs.seed)};
    for (terms::TermId element : draw.elements) {
      if (!context.store.is_var(element))
        continue;
      // Unrelated to the reference's draw: any value at all, as an input is.
      context.store.variable(element).kind = terms::VarKind::Reference;
      context.random_divergences.emplace(element, divergence);
    }
  }
};
} // namespace

std::unique_ptr<Check> make_rng_divergence_check() {
  return std::make_unique<RngDivergenceCheck>();
}

} // namespace shardproof::checkers
