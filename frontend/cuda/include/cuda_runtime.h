// shardproof's stand-in for the toolkit's cuda_runtime.h (parsing only).
#pragma once
#include "shardproof_cuda_device.h"
