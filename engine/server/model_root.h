// Server-side model paths (JSON registration). A path is only honoured under the operator's
// `--model-root DIR`: its canonical form (symlinks resolved) must be a regular file inside DIR
// and outside the model store. Every refusal says the same thing, so that a client cannot
// probe which files exist. Pure function over the file system; thread-safe.
#pragma once

#include <string>

namespace servelab::server {

// Returns the canonical path of `requested` when it is a regular file under `root` and not
// under `store_dir`. Throws StoreError (model_store.h) with one message for every refusal:
// empty root, NUL or control byte, missing, not a regular file, outside the root, in the store.
std::string resolve_model_path(const std::string& root, const std::string& store_dir,
                               const std::string& requested);

}  // namespace servelab::server
