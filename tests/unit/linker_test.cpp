#include "models/ir/linker.h"

#include <gtest/gtest.h>

using shardproof::ir::shard_to_reference_index;

TEST(ShardIndex, ContiguousShardsAlongRows) {
  // reference [4, 3], two ranks, dim 0: rank 1 holds rows 2..3
  EXPECT_EQ(shard_to_reference_index({2, 3}, 0, 1, 1, 2, 0), 6u);
  EXPECT_EQ(shard_to_reference_index({2, 3}, 0, 1, 1, 2, 5), 11u);
}

TEST(ShardIndex, ContiguousShardsAlongColumns) {
  // reference [2, 4], two ranks, dim 1: rank 1 holds columns 2..3
  EXPECT_EQ(shard_to_reference_index({2, 2}, 1, 1, 1, 2, 0), 2u);
  EXPECT_EQ(shard_to_reference_index({2, 2}, 1, 1, 1, 2, 3), 7u);
}

TEST(ShardIndex, MegatronPartitionStride) {
  // reference rows 0..7, two ranks, stride 2: pieces of 2 rows interleave,
  // rank 0 holds rows {0,1,4,5} and rank 1 rows {2,3,6,7}.
  std::vector<std::size_t> rank1;
  for (std::size_t i = 0; i < 4; ++i)
    rank1.push_back(shard_to_reference_index({4}, 0, 2, 1, 2, i));
  EXPECT_EQ(rank1, (std::vector<std::size_t>{2, 3, 6, 7}));
}
