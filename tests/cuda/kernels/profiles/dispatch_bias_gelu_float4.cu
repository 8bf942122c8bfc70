// The entry with each thread stepping the four floats it moves (written for
// these tests): correct where intermediate_size is a multiple of 4, which
// the entry does not check (its callers keep to it); at other sizes the
// float4 reads past the row or off its alignment.
#define VALUES_PER_THREAD values_per_access
#include "dispatch_bias_gelu_float4.cuh"
