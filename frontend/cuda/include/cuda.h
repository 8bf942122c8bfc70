// shardproof's stand-in for the toolkit's cuda.h (parsing only).
#pragma once
#include "shardproof_cuda_device.h"
