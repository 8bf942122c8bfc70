// The extended reals end to end: causal-masked attention under tensor
// parallelism (-inf fills, exp(-inf) = 0) is proved, a rank whose row is fully
// masked is refuted (NaN where the reference has a value), an infinity times a
// symbolic value is "could not prove", and an unshifted exp is an overflow
// hazard (SP010) that the proof over the reals does not hide.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using shardproof::testing::run_cli;

namespace {
constexpr const char *kHarness = "tests/e2e/extended_reals/causal_attention_tp.py";

nlohmann::json check(const std::string &entry, int expected_exit) {
  auto r = run_cli({"check", std::string(kHarness) + "::" + entry, "--world", "2",
                    "--format", "json"});
  EXPECT_EQ(r.exit_code, expected_exit) << entry << "\n" << r.out << r.err;
  return nlohmann::json::parse(r.out);
}

int count(const nlohmann::json &doc, const std::string &rule) {
  int n = 0;
  for (const auto &f : doc["findings"])
    n += f["rule_id"] == rule;
  return n;
}
} // namespace

class CliExtendedReals : public ::testing::TestWithParam<const char *> {};

TEST_P(CliExtendedReals, CausalMaskedAttentionIsProvedAtWorldTwo) {
  auto doc = check(GetParam(), 0);
  EXPECT_EQ(doc["verdict"], "proved");
  EXPECT_EQ(count(doc, "SP010"), 0) << "softmax shifts by its max: no hazard";
}

INSTANTIATE_TEST_SUITE_P(Cli, CliExtendedReals,
                         ::testing::Values("entry", "entry_where_full", "entry_finfo_min",
                                           "entry_log_softmax"));

TEST(CliExtendedReals, AFullyMaskedRowOnOneRankIsRefutedAtTheMask) {
  auto doc = check("entry_rank_masks_diagonal", 1);
  EXPECT_EQ(doc["verdict"], "refuted");
  ASSERT_FALSE(doc["findings"].empty());
  EXPECT_EQ(doc["findings"][0]["rule_id"], "SP001");
}

TEST(CliExtendedReals, InfinityTimesASymbolicValueIsCouldNotProve) {
  auto r = run_cli(
      {"check", std::string(kHarness) + "::entry_inf_times_parameter", "--world", "2"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("UnmodelledValue"), std::string::npos) << r.out;
}

TEST(CliExtendedReals, AnUnshiftedSoftmaxIsAnOverflowHazardNotASilentProof) {
  // The vocabulary-parallel softmax exponentiates raw logits on every rank.
  auto r = run_cli({"check",
                    "tests/fixtures/vocab_parallel_softmax_normalizer/correct.py::entry",
                    "--world", "2", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err; // a warning, and still proved
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["verdict"], "proved");
  ASSERT_EQ(count(doc, "SP010"), 1) << r.out;
  for (const auto &f : doc["findings"]) {
    if (f["rule_id"] == "SP010") {
      EXPECT_EQ(f["severity"], "warning");
      EXPECT_EQ(f["line"], 32) << "exp_logits = logits.exp()";
    }
  }
}

TEST(CliExtendedReals, AHazardOnlyTheDistributedCodeHasSaysTheReferenceShifts) {
  // Equal over the reals (exp(x - m) = exp(x) / exp(m)): proved, and the
  // hazard said.
  auto r = run_cli({"check", "tests/e2e/extended_reals/unshifted_vocab_softmax.py::entry",
                    "--world", "2", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["verdict"], "proved");
  ASSERT_EQ(count(doc, "SP010"), 1) << r.out;
  for (const auto &f : doc["findings"]) {
    if (f["rule_id"] == "SP010") {
      EXPECT_NE(f["message"].get<std::string>().find("reference shifts"),
                std::string::npos)
          << f["message"];
    }
  }
}

TEST(CliExtendedReals, AHazardIsSaidOnceAtTheExpNotWhereItsValuesTravel) {
  auto r = run_cli({"check", "tests/e2e/extended_reals/exp_then_gathered.py::entry",
                    "--world", "2", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(count(doc, "SP010"), 1) << r.out;
  for (const auto &f : doc["findings"]) {
    if (f["rule_id"] == "SP010") {
      EXPECT_EQ(f["line"], 20) << "y = torch.exp(local.float()).to(x.dtype)";
    }
  }
}
