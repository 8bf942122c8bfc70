// Cooperative groups as the lifter models them (frontend/cuda/groups.h),
// apart from any kernel: tiles' ranks and lanes, votes, and the sync units
// that order a warp's accesses.
#include "frontend/cuda/groups.h"

#include <gtest/gtest.h>

using namespace shardproof::frontend::cuda;

namespace {
const Group kBlock{Group::Scope::Block, 96, 0};
} // namespace

TEST(CudaGroups, TilesOfABlockAreAlignedRunsOfItsThreadRanks) {
  Group tile = *Group::tile_of(kBlock, 16);
  EXPECT_EQ(tile.thread_rank(37), 5);
  EXPECT_EQ(tile.meta_group_rank(37, 96), 2);
  EXPECT_EQ(tile.meta_group_size(96), 6);
  EXPECT_EQ(tile.threads_of(37, 96), std::make_pair(32, 48));
  EXPECT_EQ(tile.lane_mask(37), 0xffffu);
  EXPECT_EQ(tile.lane_mask(53), 0xffff0000u);
  EXPECT_EQ(Group::tile_of(kBlock, 32)->lane_mask(5), 0xffffffffu);
  // A block of 48: its second warp tile holds 16 threads, counted as one tile.
  Group warp = *Group::tile_of({Group::Scope::Block, 48, 0}, 32);
  EXPECT_EQ(warp.meta_group_size(48), 2);
  EXPECT_EQ(warp.threads_of(40, 48), std::make_pair(32, 48));
}

TEST(CudaGroups, ATileOfATileRanksWithinItsParent) {
  Group warp = *Group::tile_of(kBlock, 32);
  Group quarter = *Group::tile_of(warp, 8);
  EXPECT_EQ(quarter.parent_size, 32);
  EXPECT_EQ(quarter.meta_group_rank(45, 96), 1); // lane 13 of warp 1
  EXPECT_EQ(quarter.meta_group_size(96), 4);
  EXPECT_FALSE(Group::tile_of(quarter, 16)); // wider than its parent
}

TEST(CudaGroups, OnlyPowersOfTwoUpToTheWarpAreTiles) {
  EXPECT_FALSE(Group::tile_of(kBlock, 0));
  EXPECT_FALSE(Group::tile_of(kBlock, 12));
  EXPECT_FALSE(Group::tile_of(kBlock, 64)); // a multi-warp tile: not modelled
  EXPECT_FALSE(Group::tile_of({Group::Scope::Grid, 96, 0}, 32));
  EXPECT_TRUE(Group::tile_of(kBlock, 1));
}

TEST(CudaGroups, AGroupSurvivesARegister) {
  Group tile = *Group::tile_of(*Group::tile_of(kBlock, 32), 4);
  Group back = group_of(group_value(tile));
  EXPECT_EQ(back.scope, Group::Scope::Tile);
  EXPECT_EQ(back.size, 4);
  EXPECT_EQ(back.parent_size, 32);
}

TEST(CudaGroups, VotesOverTheTilesLanesInRankOrder) {
  EXPECT_EQ(tile_vote(GroupCall::Any, {0, 0, 1, 0}), 1);
  EXPECT_EQ(tile_vote(GroupCall::All, {1, 2, 1, 0}), 0);
  EXPECT_EQ(tile_vote(GroupCall::All, {1, 2, 1, 3}), 1);
  EXPECT_EQ(tile_vote(GroupCall::Ballot, {1, 0, 1, 1}), 0b1101);
}

TEST(CudaGroups, NamesOfTheModelledCalls) {
  EXPECT_EQ(group_call("num_threads"), GroupCall::Size);
  EXPECT_EQ(group_call("dim_threads"), GroupCall::DimThreads);
  EXPECT_EQ(group_call("shfl_down"), GroupCall::ShflDown);
  EXPECT_FALSE(group_call("coalesced_threads"));
  EXPECT_FALSE(group_call("match_any"));
}

TEST(CudaGroups, AWarpSyncOrdersItsLanesOnly) {
  SyncUnits units;
  units.reset(64);
  auto before = units.unit(3);
  units.sync(0, 32);
  EXPECT_EQ(units.unit(5).first, before.first);
  EXPECT_NE(units.unit(5).second, before.second);
  EXPECT_EQ(units.unit(40).second, 0); // the other warp did not sync
  EXPECT_NE(units.unit(40).first, before.first);
}

TEST(CudaGroups, ATileSyncOrdersTheTilesLanesNotItsNeighbours) {
  SyncUnits units;
  units.reset(32);
  units.sync(0, 8); // lanes 0-7 only
  auto [unit0, phase0] = units.unit(2);
  auto [unit1, phase1] = units.unit(9);
  EXPECT_NE(unit0, unit1); // lanes 2 and 9: never ordered by these syncs
  EXPECT_EQ(phase1, 0);
  units.sync(8, 8);
  EXPECT_EQ(units.unit(9).first, unit1);
  EXPECT_NE(units.unit(9).second, phase1);
  EXPECT_EQ(units.unit(2).second, phase0);
  // An access made while the warp was one unit is in none of the tiles'.
  SyncUnits fresh;
  fresh.reset(32);
  auto whole = fresh.unit(2).first;
  fresh.sync(0, 8);
  EXPECT_NE(fresh.unit(2).first, whole);
}

TEST(CudaGroups, AWarpSyncAfterTilesOrdersEveryTileOfTheWarp) {
  SyncUnits units;
  units.reset(32);
  units.sync(0, 8);
  auto a = units.unit(20);
  units.sync(0, 32);
  EXPECT_EQ(units.unit(20).first, a.first);
  EXPECT_NE(units.unit(20).second, a.second);
}

TEST(CudaGroups, TilesMadeBeforeTheirAccessesAreOrderedByTheirSyncs) {
  SyncUnits units;
  units.reset(32);
  units.split(8); // tiled_partition<8>, before any access
  auto write = units.unit(1);
  units.sync(0, 8);
  EXPECT_EQ(units.unit(0).first, write.first); // lanes 0 and 1: one tile
  EXPECT_NE(units.unit(0).second, write.second);
  EXPECT_NE(units.unit(9).first, write.first); // lane 9: another tile
}
