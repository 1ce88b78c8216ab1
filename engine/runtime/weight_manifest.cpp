#include "engine/runtime/weight_manifest.h"

#include <charconv>
#include <set>
#include <sstream>
#include <stdexcept>

namespace servelab::runtime {
namespace {

constexpr size_t kMaxLines = 1 << 20;
constexpr size_t kMaxDims = 16;

at::ScalarType dtype_named(const std::string& name) {
  static const at::ScalarType kTypes[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                          at::kLong,  at::kInt,    at::kShort, at::kChar,
                                          at::kByte,  at::kBool};
  for (at::ScalarType t : kTypes)
    if (name == c10::toString(t)) return t;
  throw std::runtime_error("unknown tensor type '" + name.substr(0, 40) + "' in a weight manifest");
}

uint64_t number(const std::string& field) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size() || field.empty())
    throw std::runtime_error("bad number '" + field.substr(0, 40) + "' in a weight manifest");
  return v;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) f.push_back(field);
  return f;
}

WeightEntry parse_entry(const std::string& line) {
  std::vector<std::string> f = fields(line);
  if (f.size() != 9)
    throw std::runtime_error("a weight manifest line has " + std::to_string(f.size()) +
                             " fields, not 9");
  WeightEntry e;
  e.path = f[0] == "." ? "" : f[0];
  e.name = f[1];
  e.dtype = dtype_named(f[2]);
  if (f[3] != "-") {
    std::stringstream dims(f[3]);
    for (std::string d; std::getline(dims, d, ',');) {
      if (e.shape.size() == kMaxDims) throw std::runtime_error("a weight manifest shape is too long");
      e.shape.push_back(static_cast<int64_t>(number(d)));
    }
  }
  e.ref = {f[4], number(f[5]), number(f[6])};
  e.offset = number(f[7]);
  e.bytes = number(f[8]);
  if (!store::BlobStore::valid_id(e.ref.id))
    throw std::runtime_error("a weight manifest names a bad blob id");
  unsigned __int128 elems = 1;
  for (int64_t d : e.shape) elems *= static_cast<uint64_t>(d);
  if (elems * c10::elementSize(e.dtype) != e.bytes)
    throw std::runtime_error("a weight manifest's shape disagrees with its bytes");
  if (e.offset > e.ref.bytes || e.bytes > e.ref.bytes - e.offset)
    throw std::runtime_error("a weight manifest's tensor runs past the end of its blob");
  return e;
}

}  // namespace

std::string WeightEntry::header() const {
  std::string h = c10::toString(dtype);
  for (int64_t d : shape) h += " " + std::to_string(d);
  return h;
}

std::string WeightManifest::text() const {
  std::ostringstream s;
  s << "code\t" << (code_key.empty() ? "-" : code_key) << '\n';
  for (const WeightEntry& e : entries) {
    std::string dims;
    for (int64_t d : e.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    s << (e.path.empty() ? "." : e.path) << '\t' << e.name << '\t' << c10::toString(e.dtype)
      << '\t' << (dims.empty() ? "-" : dims) << '\t' << e.ref.id << '\t' << e.ref.bytes << '\t'
      << e.ref.check << '\t' << e.offset << '\t' << e.bytes << '\n';
  }
  return s.str();
}

WeightManifest WeightManifest::parse(const std::string& text) {
  WeightManifest m;
  std::stringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("an empty weight manifest");
  std::vector<std::string> head = fields(line);
  if (head.size() != 2 || head[0] != "code" ||
      (head[1] != "-" && !store::BlobStore::valid_id(head[1])))
    throw std::runtime_error("a weight manifest without its code line");
  if (head[1] != "-") m.code_key = head[1];
  while (std::getline(in, line)) {
    if (m.entries.size() == kMaxLines) throw std::runtime_error("a weight manifest is too long");
    m.entries.push_back(parse_entry(line));
  }
  return m;
}

std::vector<store::BlobRef> WeightManifest::blob_refs() const {
  std::vector<store::BlobRef> refs;
  std::set<std::string> seen;
  for (const WeightEntry& e : entries)
    if (seen.insert(e.ref.id).second) refs.push_back(e.ref);
  return refs;
}

}  // namespace servelab::runtime
