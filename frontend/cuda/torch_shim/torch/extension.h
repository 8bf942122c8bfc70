// shardproof stand-in (see ATen/ATen.h).
#pragma once
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <pybind11/pybind11.h>
#include <torch/library.h>
