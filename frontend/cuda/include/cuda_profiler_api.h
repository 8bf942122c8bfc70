// shardproof's own CUDA headers: the profiler API, nothing a kernel uses.
#pragma once
#include <cuda_runtime_api.h>
