// Architectures imported ahead: the code of a weight store's skeletons, imported once per
// architecture and held for the life of the process, so that every weight store this process
// opens afterwards, and every process forked from it, loads a model of such an architecture
// as a structural copy (shared_weights.h) instead of importing its TorchScript code again.
// Importing code is most of a small model's load (TorchScript's compile, not the weights),
// and a first forward pass builds each function's execution plan; `servelab serve
// --processes N` imports and warms before it forks, so that its replicas share that code and
// those plans copy-on-write and a model already in the store costs a replica neither.
// Free of LibTorch's headers (the CLI includes it). Call before any thread that uses a
// weight store starts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace servelab::runtime {

class ArchitectureCache;

// The batches a registration's check forward runs, in this order (torch_executor.cpp); the
// warm-up runs the same, so that a replica's registration finds its kernels built.
inline constexpr std::array<int64_t, 2> kCheckBatches = {2, 1};

// The input a skeleton's architecture is warmed with: batches (kCheckBatches) of a
// 3 x height x width image, as the registration that wrote it checked its model. Kept beside
// the skeleton (skeletons/<digest>.input, "HEIGHT WIDTH").
struct WarmInput {
  int64_t height = 0, width = 0;  // 0: none
};
std::string warm_input_path(const std::string& skeleton);

// What a registration's check forward found for a model file at one input size: the width
// of its logits and the peak bytes its forwards at the check's batches (kCheckBatches)
// allocated. Kept beside the file's skeleton (skeletons/<digest>.check, with the LibTorch
// version that ran it), so that registering the same bytes again at that size, in any
// process on the store, needs no forward.
struct CheckRecord {
  WarmInput input;
  uint32_t classes = 0;
  std::array<uint64_t, kCheckBatches.size()> peak_bytes{};  // in kCheckBatches' order
};

struct ImportedArchitectures {
  size_t skeletons = 0;      // skeleton files found
  size_t architectures = 0;  // distinct code imported (one skeleton each)
  size_t warmed = 0;         // of those, run on their warm-up input
  std::vector<std::string> skipped;  // "FILE: why" for each skeleton not imported or warmed
};

// Imports the architectures of the skeletons in weight store `dir` (DIR/skeletons/*.pt) that
// this process has not imported yet. With `warm`, runs each on one thread at the check's
// batches, on the warm-up input of a skeleton of it that has one (its weights mapped for the
// passes, then unmapped), and gives the passes' memory back. A damaged or foreign file is
// skipped (listed), never fatal: loading a model from it later fails or rewrites it as
// without this.
// Thread-safety: one call at a time, before the weight stores that use it are opened.
ImportedArchitectures import_weight_store_architectures(const std::string& dir, bool warm);

// In a process forked after import_weight_store_architectures(dir, true): runs its warm-up
// passes again, so that the pages they write (execution plans and kernel caches shared
// copy-on-write with the parent) and the library code they run (whose page tables a fork
// does not copy) are this process's own before its first request rather than during it. The
// last pass's freed buffers (batch 1's, the first request's batch) are kept for that request
// (the server's idle trim gives them back); the batch-2 pass's go back before it. Returns the
// passes run; a skeleton gone since is skipped. Same thread-safety as above.
size_t rewarm_imported_architectures(const std::string& dir);

// Holds every imported architecture in `cache` (for each weight store opened afterwards).
void keep_imported_architectures(ArchitectureCache& cache);

}  // namespace servelab::runtime
