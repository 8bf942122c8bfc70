// "Proved" covers the whole step the code runs (tests/e2e/step_coverage/*.py):
// gradients are checked whoever called backward (a schedule inside the
// forward, the entry's backward on a stage whose loss needs no gradient),
// gradients kept only in main_grad and updates made inside the forward are
// checked, a gradient left where nothing checks it is never proved, and the
// summary line says how many obligations are on the backward half, or that
// the proof covers the forward alone.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using shardproof::testing::run_cli;

namespace {
struct StepCase {
  std::string target;   // tests/e2e/step_coverage/FILE.py::FUNC, without the folder
  int exit_code;        // 0 proved, 1 refuted, 3 could not prove
  std::string expected; // in the output
};

void PrintTo(const StepCase &c, std::ostream *os) { *os << c.target; }

const std::vector<StepCase> kCases = {
    // A schedule that runs every micro-batch's backward inside the forward
    // and returns a loss that needs no gradient: its gradients are checked.
    {"pipeline_schedules.py::schedule_inside_forward", 0, "4 on gradients and the step"},
    {"pipeline_schedules.py::newest_first_on_one_stage", 1,
     "the gradient of parameter 'stage.layers.0.weight'"},
    {"pipeline_schedules.py::gradients_tripled_inside_forward", 1, "[SP005]"},
    {"pipeline_schedules.py::finalize_averages_over_stages", 1, "[SP005]"},
    // The entry's backward runs on every stage, also the first, whose local
    // loss needs no gradient: its gradients arrive through the message.
    {"step_contract.py::backward_callable_on_every_stage", 0,
     "4 on gradients and the step"},
    {"step_contract.py::backward_callable_drops_half_the_gradient", 1,
     "the gradient of parameter 'layers.0.weight'"},
    // Gradients kept only in main_grad (.grad None) are those checked.
    {"step_contract.py::main_grad_averaged", 0, "2 on gradients and the step"},
    {"step_contract.py::main_grad_summed", 1, "[SP005]"},
    // The backward run through the autograd engine directly, as Megatron's
    // custom_backward does: its gradients are checked.
    {"step_contract.py::custom_backward_averaged", 0, "2 on gradients and the step"},
    {"step_contract.py::custom_backward_summed", 1, "[SP005]"},
    // A distributed optimizer's shards: each rank's main_grad is checked
    // where it holds it reduced (shardproof_grad_ranges), and only there.
    {"step_contract.py::owned_shards_averaged", 0,
     "(each element where its rank holds it reduced)"},
    {"step_contract.py::owned_shards_summed", 1, "[SP005]"},
    {"step_contract.py::owned_shards_leave_a_gap", 3,
     "no rank holds element 3 of the gradient of parameter 'proj.weight' reduced"},
    // Gradients moved where nothing checks them: never proved.
    {"step_contract.py::gradient_moved_out_of_sight", 3,
     "backward computed the gradient of parameter 'proj.weight' but the entry left it "
     "nowhere shardproof checks"},
    // An optimizer step inside the forward: the updated parameters are checked.
    {"step_contract.py::step_inside_forward", 0, "step: 'inner.proj.weight'"},
    {"step_contract.py::step_inside_forward_gradients_summed", 1,
     "parameter 'inner.proj.weight' after the optimizer step"},
    // Nothing produced a gradient: the summary says the proof is forward only.
    {"step_contract.py::forward_only", 0,
     "forward only: no gradient or updated parameter was produced"},
    // A reduction in a narrower format than its values: a warning by default.
    {"precision.py::pre_divided_in_fp16", 0,
     "warning: all_reduce carries float16 values computed from float32 ones cast on line "
     "25"},
};
} // namespace

class StepCoverage : public ::testing::TestWithParam<StepCase> {};

TEST_P(StepCoverage, EveryGradientTheStepProducesIsChecked) {
  const auto &c = GetParam();
  auto r = run_cli({"check", "tests/e2e/step_coverage/" + c.target, "--world", "2"});
  EXPECT_EQ(r.exit_code, c.exit_code) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find(c.expected), std::string::npos)
      << "expected \"" << c.expected << "\" in:\n"
      << r.out << r.err;
  if (c.exit_code != 0)
    EXPECT_EQ(r.out.find(": proved ("), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Harnesses, StepCoverage, ::testing::ValuesIn(kCases));

// Reduced in fp32, the same bucket raises no precision warning.
TEST(StepCoverage, AReductionInTheValuesOwnFormatIsNotAWarning) {
  auto r = run_cli({"check", "tests/e2e/step_coverage/precision.py::pre_divided_in_fp32",
                    "--world", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("SP008"), std::string::npos) << r.out;
}
