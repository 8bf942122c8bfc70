// shardproof's stand-in for ATen/Dispatch.h (see ATen/ATen.h): a switch over
// the dtype that runs the lambda with `scalar_t` bound to each type, as
// PyTorch's macros expand.
#pragma once
#include <ATen/ATen.h>

#define __SP_DISPATCH_CASE(ENUM, TYPE, ...)                                              \
  case ::at::ScalarType::ENUM: {                                                         \
    using scalar_t = TYPE;                                                               \
    return __VA_ARGS__();                                                                \
  }
#define __SP_DISPATCH(TYPE, NAME, CASES)                                                 \
  [&] {                                                                                  \
    switch (TYPE) {                                                                      \
      CASES                                                                              \
    default:                                                                             \
      AT_ERROR(NAME);                                                                    \
    }                                                                                    \
  }()
#define __SP_FLOATING(...)                                                               \
  __SP_DISPATCH_CASE(Float, float, __VA_ARGS__)                                          \
  __SP_DISPATCH_CASE(Double, double, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                      \
  __SP_DISPATCH(TYPE, NAME, __SP_FLOATING(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)                             \
  __SP_DISPATCH(TYPE, NAME,                                                              \
                __SP_FLOATING(__VA_ARGS__)                                               \
                    __SP_DISPATCH_CASE(Half, ::at::Half, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(T1, T2, TYPE, NAME, ...)                         \
  __SP_DISPATCH(TYPE, NAME,                                                              \
                __SP_FLOATING(__VA_ARGS__)                                               \
                    __SP_DISPATCH_CASE(Half, ::at::Half, __VA_ARGS__)                    \
                        __SP_DISPATCH_CASE(BFloat16, ::at::BFloat16, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(T1, TYPE, NAME, ...)                              \
  AT_DISPATCH_FLOATING_TYPES_AND2(T1, T1, TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...)                              \
  __SP_DISPATCH(TYPE, NAME,                                                              \
                __SP_DISPATCH_CASE(Half, ::at::Half, __VA_ARGS__)                        \
                    __SP_DISPATCH_CASE(BFloat16, ::at::BFloat16, __VA_ARGS__))
