// shardproof stand-in (see ATen/ATen.h).
#pragma once
#include <torch/extension.h>
