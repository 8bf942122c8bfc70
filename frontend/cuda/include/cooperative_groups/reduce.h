// shardproof's stand-in for the toolkit's cooperative_groups/reduce.h:
// cooperative_groups::reduce and its operators are declared with the groups.
#pragma once
#include "../cooperative_groups.h"
