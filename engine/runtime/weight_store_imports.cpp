#include "engine/runtime/weight_store_imports.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "engine/runtime/allocator.h"
#include "engine/runtime/graph_optimizer.h"
#include "engine/runtime/shared_weights.h"

namespace servelab::runtime {
namespace fs = std::filesystem;

namespace {

// The imported architectures by code key, held for the process's life.
std::mutex imported_mu;
std::map<std::string, ModulePtr>& imported() {
  static auto* by_code = new std::map<std::string, ModulePtr>;  // never destroyed: no exit order
  return *by_code;
}

// The pass each warmed architecture ran (a skeleton of it and its input), by code key, for a
// forked process to run again (rewarm_imported_architectures).
struct WarmPass {
  std::string skeleton;
  WarmInput input;
};
std::map<std::string, WarmPass>& warmed() {
  static auto* by_code = new std::map<std::string, WarmPass>;  // as imported()
  return *by_code;
}

// The store's skeleton files by code key, in name order (the same choice on every start).
// Files that cannot be read as skeletons go to `skipped`.
std::map<std::string, std::vector<std::string>> skeletons_by_code(
    const std::string& dir, ImportedArchitectures& out) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(fs::path(dir) / "skeletons", ec))
    if (f.path().extension() == ".pt" && f.is_regular_file(ec)) files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  std::map<std::string, std::vector<std::string>> by_code;
  for (const std::string& file : files) {
    ++out.skeletons;
    try {
      const std::string code = skeleton_code_key(file);
      if (!code.empty()) by_code[code].push_back(file);
    } catch (const std::exception& e) {
      const std::string why = e.what();
      out.skipped.push_back(file + ": " + why.substr(0, why.find('\n')));
    }
  }
  return by_code;
}

WarmInput read_warm_input(const std::string& skeleton) {
  WarmInput in;
  std::ifstream f(warm_input_path(skeleton));
  if (!(f >> in.height >> in.width) || in.height <= 0 || in.width <= 0 || in.height > 8192 ||
      in.width > 8192)
    return {};
  return in;
}

// Forward passes of `architecture` with the weights of `skeleton` (a structural copy, its
// blobs mapped for the passes), as a registration's check runs them (batch 2, then 1; the
// first request's batch is 1): no graph optimization, inference mode, one intra-op thread (so
// that no thread is left behind for a fork). The kernels a pass builds for its shapes (oneDNN
// compiles one per convolution and shape) are then the replicas' too.
void warm(const ModulePtr& architecture, const std::string& code, const std::string& skeleton,
          const WarmInput& input, store::BlobStore& blobs) {
  ArchitectureCache cache;
  cache.keep(code, architecture);
  SharedModule copy = load_shared(skeleton, blobs, &cache);
  OptimizerOff no_opt;
  at::set_num_threads(1);
  c10::InferenceMode guard;
  for (size_t i = 0; i < kCheckBatches.size(); ++i) {
    if (i > 0) give_back_freed_memory();  // kept: the last pass's buffers (the first batch's)
    copy.module->forward({torch::zeros({kCheckBatches[i], 3, input.height, input.width})});
  }
}

}  // namespace

std::string warm_input_path(const std::string& skeleton) {
  return (fs::path(skeleton).replace_extension(".input")).string();
}

ImportedArchitectures import_weight_store_architectures(const std::string& dir, bool warm_up) {
  ImportedArchitectures out;
  store::BlobStore blobs(dir + "/blobs");
  std::lock_guard lock(imported_mu);
  for (const auto& [code, files] : skeletons_by_code(dir, out)) {
    if (imported().count(code)) continue;
    const std::string& file = files.front();
    try {
      auto m = std::make_shared<torch::jit::Module>(torch::jit::load(file, torch::kCPU));
      m->eval();
      imported()[code] = m;
      ++out.architectures;
    } catch (const std::exception& e) {
      const std::string why = e.what();
      out.skipped.push_back(file + ": " + why.substr(0, why.find('\n')));
      continue;
    }
    if (!warm_up) continue;
    for (const std::string& skeleton : files) {
      const WarmInput input = read_warm_input(skeleton);
      if (input.height == 0) continue;
      try {
        warm(imported()[code], code, skeleton, input, blobs);
        warmed()[code] = WarmPass{skeleton, input};
        ++out.warmed;
      } catch (const std::exception& e) {
        const std::string why = e.what();
        out.skipped.push_back(skeleton + ": warm-up: " + why.substr(0, why.find('\n')));
      }
      break;  // one pass an architecture
    }
  }
  give_back_freed_memory();  // what the imports and passes built for a while
  return out;
}

size_t rewarm_imported_architectures(const std::string& dir) {
  store::BlobStore blobs(dir + "/blobs");
  std::lock_guard lock(imported_mu);
  size_t passes = 0;
  for (const auto& [code, pass] : warmed()) {
    try {
      warm(imported()[code], code, pass.skeleton, pass.input, blobs);
      ++passes;
    } catch (const std::exception&) {  // the skeleton went since: its first request pays
    }
  }
  // The last pass's freed buffers are kept: the first request's batch reuses them instead of
  // faulting its own in. The server's idle trim gives them back if none comes.
  return passes;
}

void keep_imported_architectures(ArchitectureCache& cache) {
  std::lock_guard lock(imported_mu);
  for (const auto& [code, module] : imported()) cache.keep(code, module);
}

}  // namespace servelab::runtime
