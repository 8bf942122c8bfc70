// The reference device (issue 13): what the host code's device queries
// (cudaGetDeviceProperties, cudaDeviceGetAttribute, ATen's
// getCurrentDeviceProperties) answer when a dispatcher is run. One named
// device, an NVIDIA H100 SXM5 (compute capability 9.0), so that a size
// the host derives from it (a grid capped at maxGridSize[1]) is the size
// that device would launch. No clang here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace shardproof::frontend::cuda {

// "NVIDIA H100 SXM5 80GB (compute capability 9.0)"
std::string_view reference_device_name();

// A cudaDeviceProp field of the reference device ("multiProcessorCount");
// nullopt for a field it does not give.
std::optional<std::int64_t> device_property(std::string_view field);

// A cudaDeviceProp array field ("maxGridSize", "maxThreadsDim").
std::optional<std::array<std::int64_t, 3>> device_property_triple(std::string_view field);

// A cudaDeviceAttr enumerator's value ("cudaDevAttrMaxGridDimY").
std::optional<std::int64_t> device_attribute(std::string_view enumerator);

} // namespace shardproof::frontend::cuda
