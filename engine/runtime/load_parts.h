// The phases of one model load, as TrIMS (section 6, figure 9) and PRETZEL (figure 3) split a
// cold start. Plain data; seconds.
#pragma once

namespace servelab::runtime {

struct LoadParts {
  double read_s = 0;         // the model file's bytes read from disk (page cache or device)
  double deserialize_s = 0;  // the module built from them: TorchScript's deserialization, or
                             // with a weight store its skeleton's (or a copy of a loaded one)
  double copy_s = 0;         // the weights copied from host to device memory
  double share_s = 0;        // the weight store's blobs mapped and checked (their bytes are
                             // read here, from disk or the page cache)
  double total() const { return read_s + deserialize_s + copy_s + share_s; }
  LoadParts& operator+=(const LoadParts& o) {
    read_s += o.read_s;
    deserialize_s += o.deserialize_s;
    copy_s += o.copy_s;
    share_s += o.share_s;
    return *this;
  }
};

}  // namespace servelab::runtime
