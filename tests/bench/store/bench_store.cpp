// bench_store MODELS_DIR FAMILY COUNT: see CMakeLists.txt. Prints one `name value` line per
// measurement (scripts/bench-store reads them).
#include <ATen/Parallel.h>
#include <torch/script.h>
#if __has_include(<torch/csrc/jit/python/update_graph_executor_opt.h>)
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#else
namespace torch::jit {
TORCH_API void setGraphExecutorOptimize(bool o);
}  // namespace torch::jit
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "common/page_cache.h"
#include "engine/runtime/shared_weights.h"
#include "engine/runtime/torch_weight_store.h"
#include "engine/runtime/weight_store_imports.h"
#include "engine/store/blob_store.h"
#include "engine/store/digest.h"

using namespace servelab;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Bytes per second of `hash` over a 256 MiB buffer, best of 3.
template <class Hash>
double hash_rate(Hash hash) {
  std::vector<char> data(size_t(256) << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 2654435761u >> 13);
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    auto t0 = Clock::now();
    hash(data.data(), data.size());
    best = std::min(best, seconds_since(t0));
  }
  return double(data.size()) / best;
}

torch::jit::Module load_file(const std::string& file) {
  torch::jit::Module m = torch::jit::load(file, torch::kCPU);
  m.eval();
  return m;
}

void answer(torch::jit::Module& m, int64_t side = 224) {
  c10::InferenceMode guard;
  m.forward({torch::ones({1, 3, side, side})});
}

// Resident set size of this process, in bytes (/proc/self/smaps_rollup).
uint64_t rss_bytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  for (std::string key; in >> key;) {
    uint64_t kb = 0;
    if (key == "Rss:" && in >> kb) return kb * 1024;
  }
  return 0;
}

// A large model (TrIMS section 6.3) whose input is `side` pixels square: its load and its first
// answer from its TorchScript file read cold (dropped from the page cache) against its first
// answer through the store with a fresh mapping of blobs the page cache holds (a second
// process's case), and a warm answer (the floor of any first answer: it computes), 3 rounds.
void large_model(const std::string& name, const std::string& file, int64_t side,
                 const fs::path& work) {
  store::BlobStore blobs((work / ("blobs-" + name)).string());
  const std::string skeleton = (work / (name + ".pt")).string();
  runtime::share_weights(load_file(file), blobs, skeleton);
  std::vector<double> load_cold, cold, second, warm;
  for (int r = 0; r < 3; ++r) {
    drop_from_page_cache(file);
    auto t0 = Clock::now();
    torch::jit::Module m = load_file(file);
    load_cold.push_back(seconds_since(t0));
    answer(m, side);
    cold.push_back(seconds_since(t0));
    t0 = Clock::now();
    answer(m, side);
    warm.push_back(seconds_since(t0));
    store::BlobStore fresh((work / ("blobs-" + name)).string());
    t0 = Clock::now();
    auto shared = runtime::load_shared(skeleton, fresh);
    answer(*shared.module, side);
    second.push_back(seconds_since(t0));
  }
  const char* n = name.c_str();
  std::printf("%s_load_file_cold_s %.4f\n%s_first_answer_file_cold_s %.4f\n", n,
              median(load_cold), n, median(cold));
  std::printf("%s_first_answer_store_s %.4f\n%s_answer_warm_s %.4f\n", n, median(second), n,
              median(warm));
  std::printf("%s_ratio_store_vs_file_cold %.3f\n", n, median(second) / median(cold));
  std::printf("%s_ratio_first_answer_store_vs_load_file_cold %.3f\n", n,
              median(second) / median(load_cold));
  std::printf("%s_ratio_answer_warm_vs_load_file_cold %.3f\n", n,
              median(warm) / median(load_cold));
}

// A model's first answer in a process forked after its architecture was imported from the
// store (`serve --processes`' replicas): a weight store opened in the child adds the model
// from its skeleton (the file's digest known, as after a restart) and answers once. Runs
// before this process computes anything, as serve forks before any thread. 5 rounds.
std::vector<double> forked_first_answers(const std::string& file, const std::string& other,
                                         const fs::path& dir) {
  {
    runtime::TorchWeightStore seed(dir.string(), "seed");
    seed.add(0, "other", other, "", {224, 224});
    seed.add(1, "model", file, "", {224, 224});
  }
  const runtime::ImportedArchitectures got = runtime::import_weight_store_architectures(dir.string(), true);
  std::printf("forked_imported_architectures %zu\nforked_warmed_architectures %zu\n",
              got.architectures, got.warmed);
  const std::string digest = store::Sha256::hex_file(file);
  std::vector<double> out;
  for (int r = 0; r < 5; ++r) {
    int fds[2];
    if (pipe(fds) != 0) break;
    const pid_t pid = fork();
    if (pid == 0) {
      runtime::TorchWeightStore ws(dir.string(), "child-" + std::to_string(r));
      const auto t0 = Clock::now();
      answer(*ws.add(7, "model", file, digest));
      const double s = seconds_since(t0);
      ssize_t ignored = write(fds[1], &s, sizeof s);
      (void)ignored;
      _exit(0);
    }
    close(fds[1]);
    double s = -1;
    if (read(fds[0], &s, sizeof s) == sizeof s) out.push_back(s);
    close(fds[0]);
    waitpid(pid, nullptr, 0);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_store MODELS_DIR FAMILY COUNT [LARGE:SIDE ...]\n");
    return 2;
  }
  const std::string dir = argv[1], family = argv[2];
  const int count = std::stoi(argv[3]);
  at::set_num_threads(1);
  torch::jit::setGraphExecutorOptimize(false);
  std::printf("sha256_bytes_per_s %.0f\n", hash_rate([](const char* p, size_t n) {
    store::Sha256 s;
    s.update(p, n);
    s.hex_digest();
  }));
  std::printf("xxh3_bytes_per_s %.0f\n",
              hash_rate([](const char* p, size_t n) { store::xxh3_64(p, n); }));

  const fs::path work = fs::temp_directory_path() / ("bench-store-" + std::to_string(getpid()));
  auto file_of = [&](int i) { return dir + "/" + family + "_" + std::to_string(i) + ".pt"; };
  const std::vector<double> forked = forked_first_answers(file_of(1), file_of(0), work / "forked");
  store::BlobStore blobs((work / "blobs").string());
  fs::create_directories(work / "skeletons");
  auto skeleton_of = [&](int i) { return (work / "skeletons" / (std::to_string(i) + ".pt")).string(); };
  for (int i = 0; i < count; ++i) runtime::share_weights(load_file(file_of(i)), blobs, skeleton_of(i));

  // A model's load from its file read cold (dropped from the page cache); its first answer
  // from its file in the page cache, and through the store with a fresh mapping of blobs the
  // page cache holds (a second process's case), side by side, 5 rounds each.
  std::vector<double> from_file, through_store, load_file_s, load_store_s, load_cold_s, warm_s;
  std::vector<runtime::LoadParts> store_parts;
  for (int r = 0; r < 5; ++r) {
    drop_from_page_cache(file_of(0));
    auto t0 = Clock::now();
    load_file(file_of(0));
    load_cold_s.push_back(seconds_since(t0));
    t0 = Clock::now();
    torch::jit::Module a = load_file(file_of(0));
    load_file_s.push_back(seconds_since(t0));
    answer(a);
    from_file.push_back(seconds_since(t0));
    t0 = Clock::now();
    answer(a);
    warm_s.push_back(seconds_since(t0));
    store::BlobStore fresh((work / "blobs").string());  // no mapping shared with the above
    t0 = Clock::now();
    runtime::LoadParts parts;
    auto shared = runtime::load_shared(skeleton_of(0), fresh, nullptr, &parts);
    load_store_s.push_back(seconds_since(t0));
    store_parts.push_back(parts);
    answer(*shared.module);
    through_store.push_back(seconds_since(t0));
  }
  std::printf("load_file_cold_s %.4f\nload_file_s %.4f\nload_store_s %.4f\n", median(load_cold_s),
              median(load_file_s), median(load_store_s));
  std::printf("first_answer_file_s %.4f\nfirst_answer_store_s %.4f\n", median(from_file),
              median(through_store));
  auto part_median = [&](double runtime::LoadParts::*part) {
    std::vector<double> xs;
    for (const auto& p : store_parts) xs.push_back(p.*part);
    return median(xs);
  };
  std::printf("load_store_read_s %.4f\nload_store_deserialize_s %.4f\nload_store_share_s %.4f\n",
              part_median(&runtime::LoadParts::read_s),
              part_median(&runtime::LoadParts::deserialize_s),
              part_median(&runtime::LoadParts::share_s));
  std::printf("answer_warm_s %.4f\n", median(warm_s));
  std::printf("ratio_first_answer_store_vs_load_file_cold %.3f\n",
              median(through_store) / median(load_cold_s));
  if (!forked.empty()) {
    std::printf("first_answer_forked_store_s %.4f\n", median(forked));
    std::printf("ratio_first_answer_forked_store_vs_load_file_cold %.3f\n",
                median(forked) / median(load_cold_s));
  }
  // The floor of these ratios: a first answer computes at least one warm answer's work.
  std::printf("ratio_answer_warm_vs_load_file_cold %.3f\n", median(warm_s) / median(load_cold_s));

  // A variant's load and first answer in a process that holds another of its architecture
  // (a structural copy: no code to import, no weights but its own to map).
  std::vector<double> load_copy_s, answer_copy_s;
  for (int r = 0; r < 5; ++r) {
    runtime::ArchitectureCache cache;
    store::BlobStore fresh((work / "blobs").string());
    auto other = runtime::load_shared(skeleton_of(0), fresh, &cache);
    answer(*other.module);
    auto t0 = Clock::now();
    auto copy = runtime::load_shared(skeleton_of(1), fresh, &cache);
    load_copy_s.push_back(seconds_since(t0));
    answer(*copy.module);
    answer_copy_s.push_back(seconds_since(t0));
  }
  std::printf("load_same_architecture_s %.4f\nfirst_answer_same_architecture_s %.4f\n",
              median(load_copy_s), median(answer_copy_s));

  // Resident memory the last variant adds once the others are loaded and have answered.
  runtime::ArchitectureCache cache;
  std::vector<runtime::SharedModule> held;
  for (int i = 0; i + 1 < count; ++i) {
    held.push_back(runtime::load_shared(skeleton_of(i), blobs, &cache));
    answer(*held.back().module);
  }
  const uint64_t before = rss_bytes();
  held.push_back(runtime::load_shared(skeleton_of(count - 1), blobs, &cache));
  const uint64_t loaded = rss_bytes();
  answer(*held.back().module);
  const uint64_t after = rss_bytes();
  std::printf("last_variant_rss_added_by_load %lld\n", (long long)loaded - (long long)before);
  uint64_t model_bytes = 0, own_bytes = 0;
  for (const auto& b : held.back().blobs) {
    model_bytes += b.bytes;
    bool shared = std::any_of(held.begin(), held.end() - 1, [&](const runtime::SharedModule& h) {
      return std::any_of(h.blobs.begin(), h.blobs.end(), [&](const store::BlobRef& r) {
        return r.id == b.id;
      });
    });
    if (!shared) own_bytes += b.bytes;
  }
  std::printf("variant_model_bytes %llu\nvariant_own_bytes %llu\nlast_variant_rss_added %lld\n",
              (unsigned long long)model_bytes, (unsigned long long)own_bytes,
              (long long)after - (long long)before);
  held.clear();

  // Each LARGE:SIDE argument: a large model's file LARGE.pt in MODELS_DIR, its input side.
  for (int i = 4; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t colon = arg.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = arg.substr(0, colon);
    large_model(name, dir + "/" + name + ".pt", std::stoll(arg.substr(colon + 1)), work);
  }
  fs::remove_all(work);
  return 0;
}
