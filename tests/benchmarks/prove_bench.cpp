// Replays obligations dumped by SHARDPROOF_DUMP_OBLIGATIONS=DIR (prover.cpp)
// and prints, for each, what each stage of the prover costs: the normal form
// pair by pair, then the whole pipeline in this process.
//
//   prove_bench [--solver-ms N] FILE.terms...
#include "checkers/prover/prover.h"
#include "models/terms/normal_form.h"
#include "models/terms/serialize.h"
#include "models/terms/structural_form.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace shardproof;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void replay(const std::string &path, unsigned solver_ms) {
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
  }
  double normal_s = seconds_since(start);

  start = std::chrono::steady_clock::now();
  prover::Verdict v = prover::prove_in_process(store, lhs, rhs, {}, solver_ms);
  fmt::print(
      "{}: {} nodes, {} pairs; structural form {:.2f} s ({} equal, {} over budget); "
      "pipeline {:.2f} s: {} {} {}\n",
      path, store.size(), lhs.size(), normal_s, equal, over_budget, seconds_since(start),
      prover::to_string(v.kind), v.method, v.why);
}
} // namespace

int main(int argc, char **argv) {
  unsigned solver_ms = 20000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--solver-ms") == 0 && i + 1 < argc) {
      solver_ms = static_cast<unsigned>(std::stoul(argv[++i]));
      continue;
    }
    try {
      replay(argv[i], solver_ms);
    } catch (const std::exception &e) {
      fmt::print(stderr, "{}: {}\n", argv[i], e.what());
      return 1;
    }
  }
}
