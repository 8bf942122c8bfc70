// The scaled softmax of ../profiles/scaled_softmax.cuh over c10::Half, as a
// PyTorch extension's header holds it (written for these tests), found
// through the -I of compile_commands.json.
#pragma once

#include <c10/macros/Macros.h>

#include "../../profiles/scaled_softmax.cuh"
