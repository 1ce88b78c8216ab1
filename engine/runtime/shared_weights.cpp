#include "engine/runtime/shared_weights.h"

#include <caffe2/serialize/inline_container.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "engine/runtime/weight_manifest.h"
#include "engine/store/digest.h"

namespace servelab::runtime {
namespace {

constexpr const char* kManifest = "servelab_weights";
constexpr size_t kPackAlign = 64;

// Every submodule by its path, the module itself as "". Handles refer to the same objects.
std::map<std::string, torch::jit::Module> modules_by_path(const torch::jit::Module& m) {
  std::map<std::string, torch::jit::Module> out;
  for (const auto& item : m.named_modules()) out.emplace(item.name, item.value);
  return out;
}

// The tensors (parameters and buffers) held directly by one module.
std::vector<std::pair<std::string, at::Tensor>> own_tensors(const torch::jit::Module& sub) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : sub.named_parameters(false)) out.emplace_back(p.name, p.value);
  for (const auto& b : sub.named_buffers(false)) out.emplace_back(b.name, b.value);
  return out;
}

// Whether some module of `m` holds a tensor that is neither a parameter nor a buffer: the
// manifest would not carry it, so a structural copy would keep another model's.
bool has_other_tensors(const c10::intrusive_ptr<c10::ivalue::Object>& o) {
  const c10::ClassTypePtr& type = o->type();
  for (size_t i = 0; i < type->numAttributes(); ++i) {
    const c10::IValue& v = o->getSlot(i);
    if (type->is_parameter(i) || type->is_buffer(i)) continue;
    if (v.isTensor()) return true;
    if (type->getAttribute(i)->is_module() && has_other_tensors(v.toObject())) return true;
  }
  return false;
}

// SHA-256 of what a skeleton is besides its tensors' bytes: its code, constants and object
// structure (TorchScript's per-export name mangling removed, so variants exported one after
// another in one program still match). Empty when `m` cannot be shared safely.
std::string code_key(const torch::jit::Module& m) {
  if (has_other_tensors(m._ivalue())) return "";
  std::stringstream zip;
  m.save(zip);
  caffe2::serialize::PyTorchStreamReader reader(&zip);
  std::vector<std::string> names = reader.getAllRecords();
  std::sort(names.begin(), names.end());
  static const std::regex mangle(R"(___torch_mangle_\d+\.)");
  store::Sha256 sha;
  for (const std::string& name : names) {
    if (name.rfind("code/", 0) != 0 && name != "data.pkl" && name != "constants.pkl") continue;
    auto [data, size] = reader.getRecord(name);
    std::string text(static_cast<const char*>(data.get()), size);
    sha.update(name + "\n" + std::regex_replace(text, mangle, "") + "\n");
  }
  return sha.hex_digest();
}

// A tensor over `e`'s bytes in its blob, keeping the mapping alive while any view lives.
at::Tensor mapped_tensor(const WeightEntry& e, const std::shared_ptr<const store::MappedBlob>& blob) {
  const char* data = static_cast<const char*>(blob->data()) + e.offset;
  return torch::from_blob(const_cast<char*>(data), e.shape, [blob](void*) {},
                          torch::TensorOptions().dtype(e.dtype));
}

void attach(const WeightManifest& manifest, const torch::jit::Module& m,
            store::BlobStore& blobs) {
  auto subs = modules_by_path(m);
  std::map<std::string, std::shared_ptr<const store::MappedBlob>> mapped;
  for (const WeightEntry& e : manifest.entries) {
    auto it = subs.find(e.path);
    if (it == subs.end() || !it->second.hasattr(e.name))
      throw std::runtime_error("a weight manifest names '" + e.path + "." + e.name +
                               "', which the module lacks");
    auto& blob = mapped[e.ref.id];
    if (!blob) blob = blobs.map(e.ref);
    it->second.setattr(e.name, mapped_tensor(e, blob));
  }
}

void save_atomically(const torch::jit::Module& m, const std::string& path,
                     const std::string& manifest) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  torch::jit::ExtraFilesMap extra{{kManifest, manifest}};
  m.save(tmp, extra);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write the skeleton '" + path + "'");
  }
}

WeightManifest read_manifest(const std::string& skeleton) {
  caffe2::serialize::PyTorchStreamReader reader(skeleton);
  auto [data, size] = reader.getRecord(std::string("extra/") + kManifest);
  return WeightManifest::parse(std::string(static_cast<const char*>(data.get()), size));
}

// The small tensors of a module, packed into one buffer that becomes one blob.
struct Pack {
  std::string bytes;
  std::vector<size_t> entries;  // indexes into the manifest's entries
};

}  // namespace

ModulePtr ArchitectureCache::find(const std::string& code_key) {
  if (code_key.empty()) return nullptr;
  std::lock_guard lock(mu_);
  auto it = by_code_.find(code_key);
  if (it == by_code_.end()) return nullptr;
  for (const auto& held : it->second)
    if (ModulePtr alive = held.lock()) return alive;
  return nullptr;
}

void ArchitectureCache::keep(const std::string& code_key, const ModulePtr& module) {
  if (code_key.empty()) return;
  put(code_key, module);
  std::lock_guard lock(mu_);
  kept_.push_back(module);
}

std::string skeleton_code_key(const std::string& skeleton) {
  try {
    return read_manifest(skeleton).code_key;
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + skeleton + "' is not a weight store skeleton: " + e.what());
  }
}

void ArchitectureCache::put(const std::string& code_key, const ModulePtr& module) {
  if (code_key.empty()) return;
  std::lock_guard lock(mu_);
  for (auto& [key, held] : by_code_)
    std::erase_if(held, [](const auto& w) { return w.expired(); });
  std::erase_if(by_code_, [](const auto& kv) { return kv.second.empty(); });
  by_code_[code_key].push_back(module);
}

SharedModule share_weights(torch::jit::Module m, store::BlobStore& blobs,
                           const std::string& skeleton) {
  WeightManifest manifest;
  Pack pack;
  for (auto& [path, sub] : modules_by_path(m)) {
    for (auto& [name, t] : own_tensors(sub)) {
      const size_t n = t.numel() * t.element_size();
      if (n == 0 || t.device() != torch::kCPU) continue;  // stays in the skeleton
      at::Tensor c = t.contiguous();
      WeightEntry e{path, name, c.scalar_type(), c.sizes().vec(), {}, 0, n};
      if (n >= kMinBlobBytes) {
        std::string id = store::BlobStore::content_id(e.header(), c.data_ptr(), n);
        e.ref = blobs.put(id, c.data_ptr(), n);
      } else {
        pack.bytes.resize((pack.bytes.size() + kPackAlign - 1) / kPackAlign * kPackAlign);
        e.offset = pack.bytes.size();
        pack.bytes.append(static_cast<const char*>(c.data_ptr()), n);
        pack.entries.push_back(manifest.entries.size());
      }
      sub.setattr(name, torch::empty({0}, c.options()));  // emptied in the skeleton
      manifest.entries.push_back(std::move(e));
    }
  }
  if (!pack.bytes.empty()) {
    std::string id = store::BlobStore::content_id("pack", pack.bytes.data(), pack.bytes.size());
    store::BlobRef ref = blobs.put(id, pack.bytes.data(), pack.bytes.size());
    for (size_t i : pack.entries) manifest.entries[i].ref = ref;
  }
  manifest.code_key = code_key(m);
  save_atomically(m, skeleton, manifest.text());
  attach(manifest, m, blobs);
  SharedModule out{std::make_shared<torch::jit::Module>(m), manifest.blob_refs(),
                   manifest.code_key};
  return out;
}

SharedModule load_shared(const std::string& skeleton, store::BlobStore& blobs,
                         ArchitectureCache* cache, LoadParts* parts) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  auto t = Clock::now();
  WeightManifest manifest = read_manifest(skeleton);
  ModulePtr module;
  const double read_s = seconds_since(t);
  t = Clock::now();
  if (ModulePtr same_code = cache ? cache->find(manifest.code_key) : nullptr)
    module = structural_copy(*same_code);
  else
    module = std::make_shared<torch::jit::Module>(torch::jit::load(skeleton, torch::kCPU));
  const double deserialize_s = seconds_since(t);
  t = Clock::now();
  attach(manifest, *module, blobs);
  module->eval();
  if (parts) {
    parts->read_s += read_s;
    parts->deserialize_s += deserialize_s;
    parts->share_s += seconds_since(t);
  }
  if (cache) cache->put(manifest.code_key, module);
  return SharedModule{module, manifest.blob_refs(), manifest.code_key};
}

}  // namespace servelab::runtime
