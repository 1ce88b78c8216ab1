#include "engine/runtime/shared_weights.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace servelab::runtime {
namespace {

constexpr const char* kManifest = "servelab_weights";
constexpr size_t kMaxManifestLines = 1 << 20;

// One large tensor of a module: where it hangs and which blob holds it.
struct Entry {
  std::string path;  // submodule path ("" for the module itself)
  std::string name;  // attribute name
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
  store::BlobRef ref;
};

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

std::string header_of(at::ScalarType dtype, const std::vector<int64_t>& shape) {
  std::string h = c10::toString(dtype);
  for (int64_t d : shape) h += " " + std::to_string(d);
  return h;
}

at::ScalarType dtype_named(const std::string& name) {
  static const at::ScalarType kTypes[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                          at::kLong,  at::kInt,    at::kShort, at::kChar,
                                          at::kByte,  at::kBool};
  for (at::ScalarType t : kTypes)
    if (name == c10::toString(t)) return t;
  throw std::runtime_error("unknown tensor type '" + name + "' in a weight manifest");
}

std::string manifest_line(const Entry& e) {
  std::string dims;
  for (int64_t d : e.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  std::ostringstream s;
  s << (e.path.empty() ? "." : e.path) << '\t' << e.name << '\t' << c10::toString(e.dtype) << '\t'
    << (dims.empty() ? "-" : dims) << '\t' << e.ref.id << '\t' << e.ref.bytes << '\t'
    << e.ref.check << '\n';
  return s.str();
}

uint64_t number(const std::string& field) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size())
    throw std::runtime_error("bad number '" + field.substr(0, 40) + "' in a weight manifest");
  return v;
}

Entry parse_line(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) f.push_back(field);
  if (f.size() != 7) throw std::runtime_error("a weight manifest line has " +
                                              std::to_string(f.size()) + " fields, not 7");
  Entry e;
  e.path = f[0] == "." ? "" : f[0];
  e.name = f[1];
  e.dtype = dtype_named(f[2]);
  if (f[3] != "-") {
    std::stringstream dims(f[3]);
    for (std::string d; std::getline(dims, d, ',');)
      e.shape.push_back(static_cast<int64_t>(number(d)));
  }
  e.ref = {f[4], number(f[5]), number(f[6])};
  if (!store::BlobStore::valid_id(e.ref.id))
    throw std::runtime_error("a weight manifest names a bad blob id");
  return e;
}

// A tensor over blob `e.ref`, keeping the mapping alive while any view of it lives.
at::Tensor mapped_tensor(const Entry& e, store::BlobStore& blobs) {
  uint64_t elems = 1;
  for (int64_t d : e.shape) elems *= static_cast<uint64_t>(d);
  if (elems * c10::elementSize(e.dtype) != e.ref.bytes)
    throw std::runtime_error("a weight manifest's shape disagrees with its blob's size");
  std::shared_ptr<const store::MappedBlob> blob = blobs.map(e.ref);
  void* data = const_cast<void*>(blob->data());  // read-only pages: inference never writes
  return torch::from_blob(data, e.shape, [blob](void*) {},
                          torch::TensorOptions().dtype(e.dtype));
}

void attach(const std::vector<Entry>& entries, const torch::jit::Module& m,
            store::BlobStore& blobs) {
  auto subs = modules_by_path(m);
  for (const Entry& e : entries) {
    auto it = subs.find(e.path);
    if (it == subs.end() || !it->second.hasattr(e.name))
      throw std::runtime_error("a weight manifest names '" + e.path + "." + e.name +
                               "', which the module lacks");
    it->second.setattr(e.name, mapped_tensor(e, blobs));
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

}  // namespace

SharedModule share_weights(torch::jit::Module m, store::BlobStore& blobs,
                           const std::string& skeleton) {
  std::vector<Entry> entries;
  std::string manifest;
  for (auto& [path, sub] : modules_by_path(m)) {
    for (auto& [name, t] : own_tensors(sub)) {
      const size_t n = t.numel() * t.element_size();
      if (n < kMinBlobBytes || t.device() != torch::kCPU) continue;
      at::Tensor c = t.contiguous();
      Entry e{path, name, c.scalar_type(), c.sizes().vec(), {}};
      std::string id = store::BlobStore::content_id(header_of(e.dtype, e.shape), c.data_ptr(), n);
      e.ref = blobs.put(id, c.data_ptr(), n);
      manifest += manifest_line(e);
      sub.setattr(name, torch::empty({0}, c.options()));  // emptied in the skeleton
      entries.push_back(std::move(e));
    }
  }
  save_atomically(m, skeleton, manifest);
  attach(entries, m, blobs);
  SharedModule out{std::make_shared<torch::jit::Module>(m), {}};
  for (Entry& e : entries) out.blobs.push_back(e.ref);
  return out;
}

SharedModule load_shared(const std::string& skeleton, store::BlobStore& blobs) {
  torch::jit::ExtraFilesMap extra{{kManifest, ""}};
  auto m = std::make_shared<torch::jit::Module>(torch::jit::load(skeleton, torch::kCPU, extra));
  std::vector<Entry> entries;
  std::stringstream in(extra[kManifest]);
  for (std::string line; std::getline(in, line);) {
    if (entries.size() >= kMaxManifestLines)
      throw std::runtime_error("the weight manifest of '" + skeleton + "' is too long");
    entries.push_back(parse_line(line));
  }
  attach(entries, *m, blobs);
  m->eval();
  SharedModule out{m, {}};
  for (Entry& e : entries) out.blobs.push_back(e.ref);
  return out;
}

}  // namespace servelab::runtime
