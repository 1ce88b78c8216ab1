// Module copies between tiers (see torch_tiers.h).
//
// A copy's module objects come from IValue::deepcopy with every tensor pre-mapped to itself
// in the memo, so nothing is copied there; each parameter and buffer slot of the copy is then
// set to its new tensor. (LibTorch before 2 keys the memo by storage: with one packed storage
// every tensor would map to the same one, hence the explicit assignment afterwards.)
#include "engine/runtime/torch_tiers.h"

#include <functional>
#include <map>
#include <utility>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace servelab::runtime {
namespace {

using Place = std::function<at::Tensor(const at::Tensor&)>;

// IValue::deepcopy's memo: keyed by identity from LibTorch 2 on, by aliasing before.
template <class V, class = void>
struct DeepcopyMemo {
  using type = typename V::HashAliasedIValueMap;
};
template <class V>
struct DeepcopyMemo<V, std::void_t<typename V::HashIdentityIValueMap>> {
  using type = typename V::HashIdentityIValueMap;
};

using ObjectPtr = c10::intrusive_ptr<c10::ivalue::Object>;

bool holds_tensor(const c10::ClassTypePtr& type, size_t slot) {
  return type->is_parameter(slot) || type->is_buffer(slot);
}

// The parameters and buffers of `o` and its submodules, in slot order.
void collect(const ObjectPtr& o, std::vector<at::Tensor>& out) {
  const c10::ClassTypePtr& type = o->type();
  for (size_t i = 0, n = type->numAttributes(); i < n; ++i) {
    const c10::IValue& v = o->getSlot(i);
    if (holds_tensor(type, i)) {
      if (v.isTensor()) out.push_back(v.toTensor());
    } else if (type->getAttribute(i)->is_module()) {
      collect(v.toObject(), out);
    }
  }
}

std::vector<at::Tensor> module_tensors(const torch::jit::Module& m) {
  std::vector<at::Tensor> out;
  collect(m._ivalue(), out);
  return out;
}

// Sets every parameter and buffer slot of `to` (a copy of `from`) to place(from's tensor).
// By slot index, not by name: a third of the cost of named_parameters() and setAttr().
void assign(const ObjectPtr& from, const ObjectPtr& to, const Place& place) {
  const c10::ClassTypePtr& type = from->type();
  for (size_t i = 0, n = type->numAttributes(); i < n; ++i) {
    const c10::IValue& v = from->getSlot(i);
    if (holds_tensor(type, i)) {
      if (v.isTensor()) to->setSlot(i, c10::IValue(place(v.toTensor())));
    } else if (type->getAttribute(i)->is_module()) {
      assign(v.toObject(), to->getSlot(i).toObject(), place);
    }
  }
}

ModulePtr copy_with(const torch::jit::Module& from, const Place& place) {
  torch::NoGradGuard no_grad;  // plain tensors (not inference tensors): modules keep them
  typename DeepcopyMemo<c10::IValue>::type memo;
  for (const at::Tensor& t : module_tensors(from)) memo[c10::IValue(t)] = c10::IValue(t);
  auto copy = std::make_shared<torch::jit::Module>(from._ivalue()->deepcopy(memo));
  assign(from._ivalue(), copy->_ivalue(), place);
  copy->eval();
  return copy;
}

// A contiguous view of `t`'s shape and type over `bytes` (uint8) from `offset`.
at::Tensor view_of(const at::Tensor& bytes, int64_t offset, const at::Tensor& t) {
  return bytes.narrow(0, offset, static_cast<int64_t>(t.nbytes()))
      .view(t.scalar_type())
      .view(t.sizes());
}

}  // namespace

ModulePtr structural_copy(const torch::jit::Module& m) {
  return copy_with(m, [](const at::Tensor& t) { return t; });
}

uint64_t tensor_bytes(const torch::jit::Module& m) {
  std::unordered_set<const void*> seen;  // shared storages count once
  uint64_t total = 0;
  for (const at::Tensor& t : module_tensors(m)) {
    if (!t.defined() || !t.has_storage()) continue;
    if (seen.insert(t.storage().data()).second) total += t.storage().nbytes();
  }
  return total;
}

ModulePtr packed(const torch::jit::Module& m, bool pinned) {
  constexpr int64_t kAlign = 256;  // cuDNN and cuBLAS want aligned operands
  std::unordered_map<const void*, int64_t> offset;  // by TensorImpl
  int64_t total = 0;
  for (const at::Tensor& t : module_tensors(m)) {
    offset[t.unsafeGetTensorImpl()] = total;
    total += (static_cast<int64_t>(t.nbytes()) + kAlign - 1) / kAlign * kAlign;
  }
  at::Tensor flat = torch::empty(
      {total}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pinned));
  return copy_with(m, [&](const at::Tensor& t) {
    at::Tensor slot = view_of(flat, offset.at(t.unsafeGetTensorImpl()), t);
    slot.copy_(t);
    return slot;
  });
}

ModulePtr copy_to_device(const torch::jit::Module& host, torch::Device device) {
  // The copies first (asynchronous from pinned memory), then the module objects: building
  // them on the CPU overlaps the DMA. Each device tensor is the host tensor's view (sizes,
  // strides, offset) of its storage's copy.
  torch::NoGradGuard no_grad;
  std::unordered_map<const void*, at::Tensor> copies;  // host storage -> its bytes on device
  for (const at::Tensor& t : module_tensors(host)) {
    if (copies.count(t.storage().data())) continue;
    at::Tensor bytes = at::empty({0}, t.options().dtype(torch::kUInt8));
    bytes.set_(t.storage(), 0, {static_cast<int64_t>(t.storage().nbytes())}, {1});
    copies.emplace(t.storage().data(), bytes.to(device, /*non_blocking=*/true, /*copy=*/true));
  }
  std::map<std::pair<const void*, c10::ScalarType>, at::Tensor> typed;  // storage as dtype
  return copy_with(host, [&](const at::Tensor& t) {
    const at::Tensor& bytes = copies.at(t.storage().data());
    if (bytes.numel() % static_cast<int64_t>(t.element_size()) != 0)  // an odd shared storage
      return t.to(device, /*non_blocking=*/true, /*copy=*/true);
    auto key = std::make_pair(t.storage().data(), t.scalar_type());
    auto it = typed.find(key);
    if (it == typed.end()) it = typed.emplace(key, bytes.view(t.scalar_type())).first;
    return it->second.as_strided(t.sizes(), t.strides(), t.storage_offset());
  });
}

}  // namespace servelab::runtime
