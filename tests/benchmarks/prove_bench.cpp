// Replays obligations dumped by SHARDPROOF_DUMP_OBLIGATIONS=DIR (prover.cpp)
// and prints, for each, what each stage of the prover costs: the normal form
// pair by pair, then the whole pipeline in this process.
//
//   prove_bench [--solver-ms N] [--show] FILE.terms...
#include "checkers/prover/prover.h"
#include "models/terms/normal_form.h"
#include "models/terms/serialize.h"
#include "models/terms/structural_form.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace shardproof;

namespace {
// The top of a term, deeper subterms as #id: enough to see where two
// normal forms part.
std::string shallow(const terms::TermStore &store, terms::TermId t, int depth) {
  const terms::Node &n = store.node(t);
  if (n.args.empty() || depth == 0)
    return n.args.empty() ? store.to_string(t, 60) : fmt::format("#{}", t);
  std::string out = fmt::format(
      "{}{}(", static_cast<int>(n.op),
      n.op == terms::Op::App ? terms::fn_name(static_cast<terms::Fn>(n.payload)) : "");
  for (std::size_t i = 0; i < n.args.size(); ++i)
    out += (i ? ", " : "") + shallow(store, n.args[i], depth - 1);
  return out + ")";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void replay(const std::string &path, unsigned solver_ms, bool show) {
  std::ifstream in(path);
  terms::TermStore store;
  terms::TermLists lists = terms::read_terms(in, store);
  const auto &lhs = lists["lhs"];
  const auto &rhs = lists["rhs"];

  auto start = std::chrono::steady_clock::now();
  terms::StructuralNormalizer structural(store);
  std::size_t equal = 0, over_budget = 0;
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    auto a = structural.normalize(lhs[i]);
    auto b = structural.normalize(rhs[i]);
    equal += a && b && *a == *b;
    over_budget += !a || !b;
    if (show && a && b && *a != *b)
      fmt::print("pair {}:\n  lhs {}\n  rhs {}\n", i, shallow(store, *a, 6),
                 shallow(store, *b, 6));
  }
  double normal_s = seconds_since(start);

  fmt::print(
      "{}: {} nodes, {} pairs; structural form {:.2f} s ({} equal, {} over budget); ",
      path, store.size(), lhs.size(), normal_s, equal, over_budget);
  std::fflush(stdout);
  start = std::chrono::steady_clock::now();
  prover::Verdict v = prover::prove_in_process(store, lhs, rhs, {}, solver_ms);
  fmt::print("pipeline {:.2f} s: {} {} {}\n", seconds_since(start),
             prover::to_string(v.kind), v.method, v.why);
}
} // namespace

int main(int argc, char **argv) {
  unsigned solver_ms = 20000;
  bool show = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--solver-ms") == 0 && i + 1 < argc) {
      solver_ms = static_cast<unsigned>(std::stoul(argv[++i]));
      continue;
    }
    if (std::strcmp(argv[i], "--show") == 0) {
      show = true; // the structural forms of the pairs it leaves open
      continue;
    }
    try {
      replay(argv[i], solver_ms, show);
    } catch (const std::exception &e) {
      fmt::print(stderr, "{}: {}\n", argv[i], e.what());
      return 1;
    }
  }
}
