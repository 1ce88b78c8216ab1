#include "engine/runtime/torch_weight_store.h"

#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/runtime/allocator.h"
#include "engine/runtime/weight_store_imports.h"
#include "engine/store/digest.h"

namespace servelab::runtime {
namespace fs = std::filesystem;

namespace {
std::string key(ModelId id) { return std::to_string(id); }

// Writes `line` as the file at `path` unless there is one (temporary file, then rename).
// Under the store's lock; a file that cannot be written is left out: what it records is a
// shortcut for a later registration or import, which does without it.
void write_once(const std::string& path, const std::string& line) {
  std::error_code ec;
  if (fs::exists(path, ec)) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line << "\n";
    if (!out) return;
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

// Writes `skeleton`'s warm-up input (weight_store_imports.h) unless it has one.
void note_warm_input(const std::string& skeleton, const WarmInput& input) {
  if (input.height <= 0 || input.width <= 0) return;
  write_once(warm_input_path(skeleton),
             std::to_string(input.height) + " " + std::to_string(input.width));
}

// skeletons/<digest>.check: "HEIGHT WIDTH CLASSES PEAK... TORCH_VERSION" on one line.
std::string check_path(const std::string& skeleton) {
  return fs::path(skeleton).replace_extension(".check").string();
}

std::optional<CheckRecord> parse_check(const std::string& line) {
  std::istringstream in(line);
  CheckRecord r;
  std::string version;
  in >> r.input.height >> r.input.width >> r.classes;
  for (uint64_t& p : r.peak_bytes) in >> p;
  in >> version;
  if (!in || version != TORCH_VERSION || r.classes == 0) return std::nullopt;
  return r;
}

}  // namespace

TorchWeightStore::TorchWeightStore(const std::string& dir, const std::string& holder)
    : dir_(dir), blobs_(dir + "/blobs"), holders_(dir, holder) {
  keep_imported_architectures(architectures_);
}

std::string TorchWeightStore::skeleton_path(const std::string& digest) const {
  if (!store::BlobStore::valid_id(digest))
    throw std::runtime_error("'" + digest.substr(0, 80) + "' is not a SHA-256 digest");
  return dir_ + "/skeletons/" + digest + ".pt";
}

ModulePtr TorchWeightStore::add(ModelId id, const std::string& name, const std::string& file,
                                std::string digest, const WarmInput& input) {
  if (digest.empty()) digest = store::Sha256::hex_file(file);
  const std::string skeleton = skeleton_path(digest);
  store::Holders::Lock lock(holders_);
  SharedModule shared;
  std::error_code ec;
  if (fs::exists(skeleton, ec)) {
    try {
      shared = load_shared(skeleton, blobs_, &architectures_);
    } catch (const std::exception&) {
      shared = {};  // damaged: shared again below from the model file, which rewrites it
    }
  }
  const bool read_file = !shared.module;
  if (read_file) {
    torch::jit::Module m = torch::jit::load(file, torch::kCPU);
    m.eval();
    shared = share_weights(m, blobs_, skeleton);
    // A variant of an architecture this process already holds is served as a structural
    // copy of it, as a load from the store would be (one set of compiled code), and the code
    // just imported from the file is freed with `m`.
    if (architectures_.find(shared.code_key))
      shared = load_shared(skeleton, blobs_, &architectures_);
    else
      architectures_.put(shared.code_key, shared.module);
  }
  if (read_file) give_back_freed_memory();  // the file and its tensors, read and hashed
  holders_.hold(digest, name, shared.blobs);
  note_warm_input(skeleton, input);
  std::lock_guard guard(mu_);
  usage_.set(key(id), shared.blobs);
  held_[id] = {name, digest, skeleton};
  return shared.module;
}

std::optional<std::string> TorchWeightStore::skeleton_of(ModelId id) const {
  std::lock_guard guard(mu_);
  auto it = held_.find(id);
  if (it == held_.end()) return std::nullopt;
  return it->second.skeleton;
}

ModulePtr TorchWeightStore::reload(ModelId id, LoadParts* parts) {
  const std::optional<std::string> skeleton = skeleton_of(id);
  if (!skeleton) throw std::runtime_error("model was removed");
  return load_shared(*skeleton, blobs_, &architectures_, parts).module;
}

std::optional<CheckRecord> TorchWeightStore::recorded_check(ModelId id,
                                                          const WarmInput& input) const {
  const std::optional<std::string> skeleton = skeleton_of(id);
  if (!skeleton) return std::nullopt;
  std::ifstream in(check_path(*skeleton));
  char text[256];  // a record is one short line: a longer file is not one
  in.read(text, sizeof text);
  const std::string line(text, static_cast<size_t>(in.gcount()));
  if (line.empty() || line.back() != '\n' || line.find('\n') + 1 != line.size())
    return std::nullopt;
  std::optional<CheckRecord> r = parse_check(line);
  if (!r || r->input.height != input.height || r->input.width != input.width)
    return std::nullopt;
  return r;
}

void TorchWeightStore::record_check(ModelId id, const CheckRecord& check) {
  store::Holders::Lock lock(holders_);  // one writer at a time; the first record stays
  const std::optional<std::string> skeleton = skeleton_of(id);
  if (!skeleton) return;
  std::ostringstream line;
  line << check.input.height << " " << check.input.width << " " << check.classes;
  for (uint64_t p : check.peak_bytes) line << " " << p;
  line << " " << TORCH_VERSION;
  write_once(check_path(*skeleton), line.str());
}

void TorchWeightStore::remove(ModelId id) {
  store::Holders::Lock lock(holders_);
  Held held;
  {
    std::lock_guard guard(mu_);
    auto it = held_.find(id);
    if (it == held_.end()) return;
    held = it->second;
    held_.erase(it);
    usage_.remove(key(id));
  }
  holders_.release(held.digest, held.name);
  holders_.collect(blobs_);
}

store::WeightBytes TorchWeightStore::bytes_of(ModelId id) const {
  std::lock_guard guard(mu_);
  return usage_.bytes_of(key(id));
}

std::vector<WeightPart> TorchWeightStore::parts_of(ModelId id) const {
  std::lock_guard guard(mu_);
  std::vector<WeightPart> parts;
  for (const store::BlobRef& b : usage_.blobs_of(key(id)))
    parts.push_back({std::stoull(b.id.substr(0, 16), nullptr, 16), b.bytes});
  return parts;
}

store::Tidied TorchWeightStore::tidy() {
  store::Holders::Lock lock(holders_);
  std::set<std::pair<std::string, std::string>> kept;
  {
    std::lock_guard guard(mu_);
    for (const auto& [id, held] : held_) kept.insert({held.digest, held.name});
  }
  store::Tidied t;
  t.marks = holders_.release_others(kept);
  t.blobs = holders_.collect(blobs_);
  return t;
}

}  // namespace servelab::runtime
