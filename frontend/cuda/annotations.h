// The `// shardproof:` annotations of a .cu file (issue 13): which kernel to
// launch at which reduced grid, its arguments, and the PyTorch expression
// its output must equal.
//
//   // shardproof: launch KERNEL[<TEMPLATE ARGS>] grid=(X[,Y[,Z]]) block=(X[,Y[,Z]])
//   [shared=BYTES]
//   // shardproof: arg NAME = float32[D0,D1,...]   (a device buffer, symbolic contents)
//   // shardproof: arg NAME = VALUE                 (a scalar argument)
//   // shardproof: reference OUT = PYTORCH EXPRESSION over the arg names
//
// A multi-rank launch (a custom all-reduce: one launch per rank, each
// reading its peers' buffers through an array of pointers):
//
//   // shardproof: ranks N                   (the launch runs once per rank, 2-8)
//   // shardproof: arg NAME = rank            (a scalar: each launch's own rank)
//   // shardproof: arg NAME = float32[D0,...] per-rank
//        (one buffer per rank; the reference sees them stacked, [N,D0,...])
//   // shardproof: arg NAME = int32[D0,...] [per-rank] zeros   (flags, all 0)
//   // shardproof: arg NAME = ptrs(BUF)       (a device array of the ranks' BUF
//        buffers, rank order: T**, T* const*, or a struct of one array of
//        pointers (vLLM's RankData) by value or by pointer)
//   // shardproof: reference OUT = EXPR
//        (OUT per-rank: EXPR of OUT's shape is every rank's OUT; of [N,D0,...],
//        row r is rank r's)
#pragma once

#include "models/ir/trace.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardproof::frontend::cuda {

// A problem with the input, at a line of it: the user's to fix.
struct Diagnostic {
  ir::SourceLoc loc;
  std::string message;
};

struct KernelArg {
  std::string name;
  ir::SourceLoc loc;
  // A device buffer: its element type (Float32, Float16, BFloat16, Int32,
  // Int64) and shape; its contents are symbolic.
  std::optional<ir::DType> buffer_type;
  ir::Shape shape;
  // A buffer of integers with these contents (row-major), given by a
  // profile (a mask): the kernel reads them as they are, the reference
  // holds them as a constant tensor. Its element type is any integer.
  std::vector<std::int64_t> concrete;
  // A scalar: the value as written (an integer or a floating-point literal).
  std::string scalar;
  // In a multi-rank launch: one buffer per rank; the scalar `rank`; an array
  // of the ranks' `pointers_to` buffers (ptrs(BUF)).
  bool per_rank = false;
  bool is_rank = false;
  std::string pointers_to;
  bool is_buffer() const { return buffer_type.has_value(); }
  bool is_pointer_table() const { return !pointers_to.empty(); }
  bool is_concrete() const { return !concrete.empty(); }
};

struct KernelLaunch {
  ir::SourceLoc loc; // the launch annotation
  std::string kernel;
  std::string template_args; // "float, 32" for KERNEL<float, 32>; empty if none
  std::array<int, 3> grid{1, 1, 1}, block{1, 1, 1};
  int shared_bytes = 0; // dynamic shared memory
  int ranks = 0;        // `ranks N`: run once per rank; 0 for one launch
  std::vector<KernelArg> args;
  std::string output;    // the buffer the reference describes
  std::string reference; // the PyTorch expression
  ir::SourceLoc reference_loc;

  // KERNEL or KERNEL<ARGS>, as C++ names it.
  std::string callee() const {
    return template_args.empty() ? kernel : kernel + "<" + template_args + ">";
  }
  const KernelArg *arg(const std::string &name) const;
  // The shape the reference sees: a per-rank buffer's stacked over the ranks.
  ir::Shape reference_shape(const KernelArg &arg) const;
};

struct Annotations {
  std::vector<KernelLaunch> launches;
  std::optional<Diagnostic> error; // the first malformed annotation
};

// Reads every launch of `lines` (a file's lines, `file` naming it). Each
// launch is followed by its args and one reference, before the next launch.
Annotations read_annotations(const std::string &file,
                             const std::vector<std::string> &lines);
// The same for the file at `path`; one that cannot be read is an error.
Annotations read_annotations(const std::string &path);

} // namespace shardproof::frontend::cuda
