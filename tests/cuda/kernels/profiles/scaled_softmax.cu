// A scaled softmax in the style of apex's scaled_softmax_warp_forward
// (scaled_softmax.cuh) and nothing else: no annotations and no host code,
// its profile gives the reference softmax(src * scale) and reduced launches
// as apex's dispatcher computes them.
#include "scaled_softmax.cuh"
