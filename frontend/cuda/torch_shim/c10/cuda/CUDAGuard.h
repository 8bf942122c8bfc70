// shardproof stand-in (see ATen/ATen.h).
#pragma once
#include <ATen/cuda/CUDAContext.h>
