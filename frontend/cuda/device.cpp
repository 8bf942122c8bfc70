#include "frontend/cuda/device.h"

#include <map>
#include <string>

namespace shardproof::frontend::cuda {

namespace {

constexpr std::array<std::int64_t, 3> kMaxGridSize{2147483647, 65535, 65535};
constexpr std::array<std::int64_t, 3> kMaxThreadsDim{1024, 1024, 64};

// The H100 SXM5's properties, as cudaGetDeviceProperties reports them.
const std::map<std::string, std::int64_t, std::less<>> &properties() {
  static const std::map<std::string, std::int64_t, std::less<>> table{
      {"maxThreadsPerBlock", 1024},
      {"warpSize", 32},
      {"multiProcessorCount", 132},
      {"maxThreadsPerMultiProcessor", 2048},
      {"maxBlocksPerMultiProcessor", 32},
      {"sharedMemPerBlock", 49152},
      {"sharedMemPerBlockOptin", 232448},
      {"sharedMemPerMultiprocessor", 233472},
      {"regsPerBlock", 65536},
      {"regsPerMultiprocessor", 65536},
      {"totalConstMem", 65536},
      {"l2CacheSize", 52428800},
      {"major", 9},
      {"minor", 0},
      {"concurrentKernels", 1},
      {"cooperativeLaunch", 1},
  };
  return table;
}

} // namespace

std::string_view reference_device_name() {
  return "NVIDIA H100 SXM5 80GB (compute capability 9.0)";
}

std::optional<std::int64_t> device_property(std::string_view field) {
  auto it = properties().find(field);
  if (it == properties().end())
    return std::nullopt;
  return it->second;
}

std::optional<std::array<std::int64_t, 3>>
device_property_triple(std::string_view field) {
  if (field == "maxGridSize")
    return kMaxGridSize;
  if (field == "maxThreadsDim")
    return kMaxThreadsDim;
  return std::nullopt;
}

std::optional<std::int64_t> device_attribute(std::string_view enumerator) {
  struct Field {
    const char *name;
    int index = -1; // of an array field
  };
  // cudaDeviceAttr's enumerators, as the cudaDeviceProp fields they read.
  static const std::map<std::string, Field, std::less<>> table{
      {"cudaDevAttrMaxThreadsPerBlock", {"maxThreadsPerBlock"}},
      {"cudaDevAttrMaxBlockDimX", {"maxThreadsDim", 0}},
      {"cudaDevAttrMaxBlockDimY", {"maxThreadsDim", 1}},
      {"cudaDevAttrMaxBlockDimZ", {"maxThreadsDim", 2}},
      {"cudaDevAttrMaxGridDimX", {"maxGridSize", 0}},
      {"cudaDevAttrMaxGridDimY", {"maxGridSize", 1}},
      {"cudaDevAttrMaxGridDimZ", {"maxGridSize", 2}},
      {"cudaDevAttrMaxSharedMemoryPerBlock", {"sharedMemPerBlock"}},
      {"cudaDevAttrMaxSharedMemoryPerBlockOptin", {"sharedMemPerBlockOptin"}},
      {"cudaDevAttrMaxSharedMemoryPerMultiprocessor", {"sharedMemPerMultiprocessor"}},
      {"cudaDevAttrWarpSize", {"warpSize"}},
      {"cudaDevAttrMultiProcessorCount", {"multiProcessorCount"}},
      {"cudaDevAttrMaxThreadsPerMultiProcessor", {"maxThreadsPerMultiProcessor"}},
      {"cudaDevAttrMaxBlocksPerMultiprocessor", {"maxBlocksPerMultiProcessor"}},
      {"cudaDevAttrMaxRegistersPerBlock", {"regsPerBlock"}},
      {"cudaDevAttrL2CacheSize", {"l2CacheSize"}},
      {"cudaDevAttrComputeCapabilityMajor", {"major"}},
      {"cudaDevAttrComputeCapabilityMinor", {"minor"}},
  };
  auto it = table.find(enumerator);
  if (it == table.end())
    return std::nullopt;
  const Field &field = it->second;
  if (field.index < 0)
    return device_property(field.name);
  return (*device_property_triple(field.name))[field.index];
}

} // namespace shardproof::frontend::cuda
