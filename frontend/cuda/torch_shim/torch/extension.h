// shardproof stand-in (see ATen/ATen.h).
#pragma once
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
