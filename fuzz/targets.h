// Fuzz entry points: one per input surface of the server. Each takes arbitrary bytes, must
// never crash, leak or hang, and returns 0. Built as libFuzzer binaries by scripts/fuzz
// (clang, fuzz/libfuzzer_main.cpp) and run over the seed corpora by the CTest test
// fuzz_corpus_regression (any compiler, fuzz/corpus_regression.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace servelab::fuzz {

// Raw bytes as an HTTP/1.1 request: Beast's parser, the transport's header checks, target
// splitting and percent-decoding, then the server's route table.
int http_request(const uint8_t* data, size_t size);
// First line: a Content-Type; the rest: a multipart/form-data body.
int multipart(const uint8_t* data, size_t size);
// First byte picks the body form (JSON, multipart, other); the rest is a POST /register body.
int register_request(const uint8_t* data, size_t size);
// Bytes as a classify body: header reading and the limits check.
int image_guard(const uint8_t* data, size_t size);
// Bytes as the YAML of a run configuration (config/run_config.h), parsed and written back.
int run_config(const uint8_t* data, size_t size);
// Bytes as the YAML of a cost profile (config/profile_yaml.h); one that parses must read back
// the same from what it writes.
int profile_file(const uint8_t* data, size_t size);
// First line: the Inference-Header-Content-Length value (empty: no header); the rest: a
// KServe v2 infer body for an FP32 input of shape [1, 3, 2, 2]; then its response.
int v2_infer(const uint8_t* data, size_t size);
// Bytes as a POST /groups body; a definition that parses must read back the same from its
// JSON form, and its vote over members that all answered must be a 200 naming them all.
int group_definition(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // also the folder of its seed corpus: fuzz/corpus/<name>/
  int (*run)(const uint8_t*, size_t);
};
inline constexpr Target kTargets[] = {{"http_request", http_request},
                                      {"multipart", multipart},
                                      {"register_request", register_request},
                                      {"image_guard", image_guard},
                                      {"run_config", run_config},
                                      {"v2_infer", v2_infer},
                                      {"group_definition", group_definition},
                                      {"profile_file", profile_file}};

}  // namespace servelab::fuzz
