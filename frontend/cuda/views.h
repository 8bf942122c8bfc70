// Views (issue 13): memory of one scalar format read or written through a
// pointer of another type (four halves copied as a float2, sixteen bytes as
// a uint4). What a type's scalars are and what an access of it needs, as
// the lifter asks: no lifter state here.
#pragma once

#include <clang/AST/ASTContext.h>

#include <cstdint>
#include <optional>
#include <string>

namespace shardproof::frontend::cuda {

// "float16" for __half and c10::Half, "bfloat16" for __nv_bfloat16 and
// c10::BFloat16 (structs in the headers, one real each for the lifter);
// nullopt for any other type.
std::optional<std::string> sixteen_bit_format(clang::QualType type);

// The format of a scalar type's values: "float32", "float64", "float16",
// "bfloat16", "int32", "uint8", "bool", a pointer's type, ...; nullopt for
// a type that is not a scalar (a struct, an array).
std::optional<std::string> scalar_format(const clang::ASTContext &context,
                                         clang::QualType type);

// The alignment an access of `type` needs: its own, or for CUDA's vector
// structs (float2, float4, uint4, __half2, ...) their size, as the toolkit
// declares them (__align__(8), __align__(16)) whatever header set is parsed.
std::int64_t access_alignment(const clang::ASTContext &context, clang::QualType type);

} // namespace shardproof::frontend::cuda
