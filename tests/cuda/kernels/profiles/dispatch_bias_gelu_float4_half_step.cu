// The same entry with each thread stepping two floats but moving a float4
// (written for these tests): every second thread reads 8 bytes into its
// neighbour's vector, misaligned at every row size, a multiple of 4 too.
#define VALUES_PER_THREAD 2
#include "dispatch_bias_gelu_float4.cuh"
