// The built-in extension module `_shardproof`: terms as Python numbers (so
// numpy object arrays of them are our symbolic tensors) and the recording
// calls through which the stand-in torch writes the tensor IR.
#pragma once

#include "frontend/frontend.h"
#include "models/ir/trace.h"
#include "models/terms/term_store.h"
#include "models/terms/witness.h"

#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace shardproof::frontend {

// What the module records into; set by the tracer around each rank's run.
struct RecordingContext {
  terms::TermStore *store = nullptr;
  ir::Trace *trace = nullptr;
  terms::VarKind leaf_kind = terms::VarKind::Reference;
  const ir::KnownCollectives *known_collectives = nullptr;
  // The path's witness (models/terms/witness.h) at which value-dependent
  // decisions are made; none: such decisions stop the run.
  std::optional<terms::Witness> witness;
  // The witness values of collective results an earlier pass linked.
  const terms::KnownPlaceholderValues *known_placeholders = nullptr;
  // The reference run's trace while a rank is traced (none in the reference
  // run): a rank's leaf is valued at the witness as the reference elements
  // it stands for (ir::counterpart_in).
  const ir::Trace *reference = nullptr;
  // What torch.utils.cpp_extension.load builds; null: not modelled.
  const ExtensionResolver *extensions = nullptr;
  // The calls whose result may not be guessed (RankRun::not_guessed).
  const std::set<ir::KnownCollectiveKey> *not_guessed = nullptr;
};

void set_recording_context(RecordingContext *context);

// Registered with PyImport_AppendInittab before the interpreter starts.
PyObject *init_shardproof_module();

// _shardproof.TraceTimeout: what the watchdog raises in an overlong run.
PyObject *trace_timeout_error();

} // namespace shardproof::frontend
