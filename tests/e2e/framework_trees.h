// The framework trees the framework tests check: the pinned releases ctest
// installs from the Python Package Index into build/frameworks
// (tests/frameworks/pins.txt, the frameworks.install fixture), or the trees
// MEGATRON_ROOT / DEEPSPEED_ROOT name. Without either the tests fail saying
// so; they never skip.
#pragma once

#include <gtest/gtest.h>

namespace shardproof::testing {

// Sets MEGATRON_ROOT, which shardproof's runs read, to the pinned release
// unless the environment names a tree, and checks that it holds megatron/core.
::testing::AssertionResult use_megatron();

// Sets DEEPSPEED_ROOT and DEEPSPEED_PYTHON_PATH to the pinned release and its
// pydantic 2 unless the environment names a tree (with the folders it needs
// in DEEPSPEED_PYTHON_PATH), and checks that they are there.
::testing::AssertionResult use_deepspeed();

} // namespace shardproof::testing
