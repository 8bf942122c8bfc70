#include "frontend/cuda/views.h"

#include <fmt/format.h>

namespace shardproof::frontend::cuda {

std::optional<std::string> sixteen_bit_format(clang::QualType type) {
  const auto *record = type.getCanonicalType()->getAsRecordDecl();
  if (!record)
    return std::nullopt;
  std::string name = record->getQualifiedNameAsString();
  if (name == "__half" || name == "c10::Half")
    return "float16";
  if (name == "__nv_bfloat16" || name == "c10::BFloat16")
    return "bfloat16";
  return std::nullopt;
}

std::optional<std::string> scalar_format(const clang::ASTContext &context,
                                         clang::QualType type) {
  type = type.getCanonicalType().getUnqualifiedType();
  if (auto sixteen = sixteen_bit_format(type))
    return sixteen;
  if (type->isBooleanType())
    return "bool";
  if (type->isRealFloatingType())
    return fmt::format("float{}", context.getTypeSize(type));
  if (type->isIntegerType())
    return fmt::format("{}int{}", type->isUnsignedIntegerType() ? "u" : "",
                       context.getTypeSize(type));
  if (type->isScalarType()) // a pointer, an enumeration
    return type.getAsString();
  return std::nullopt;
}

std::int64_t access_alignment(const clang::ASTContext &context, clang::QualType type) {
  type = type.getCanonicalType();
  if (type->isIncompleteType())
    return 1;
  std::int64_t align = context.getTypeAlignInChars(type).getQuantity();
  std::int64_t size = context.getTypeSizeInChars(type).getQuantity();
  bool vector = type->isRecordType() && !sixteen_bit_format(type);
  if (vector && size <= 16 && (size & (size - 1)) == 0)
    return std::max(align, size);
  return align;
}

} // namespace shardproof::frontend::cuda
