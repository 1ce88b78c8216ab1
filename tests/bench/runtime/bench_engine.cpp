// Engine vs raw LibTorch throughput (images/s) on one model, measured in alternating rounds
// in one process so that machine noise hits both alike. The engine runs one worker with
// fixed batches of --batch, fed by a closed loop that keeps 3 x batch requests in flight
// through submit_raw (preprocessed inputs: this measures the serving path, not OpenCV).
//
//   bench_engine --model models/resnet18.pt [--batch 8] [--threads 2] [--seconds 5]
//                [--rounds 3] [--size 224]
// Prints one line per round and a final `ratio=` line (engine / raw, summed over rounds).
#include <ATen/Parallel.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include <future>
#include <sys/resource.h>

#include "common/clock.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/task_thread.h"

using namespace servelab;
using namespace servelab::runtime;
using Clock = std::chrono::steady_clock;

namespace {

// Minor page faults of the process so far (fresh pages from the kernel: glibc malloc gave
// memory back and takes it again).
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Images per second of a plain forward loop on a fixed batch: `batch` copies of the engine's
// input (same values: the work of some ops depends on them).
double raw_round(torch::jit::Module& m, const std::vector<float>& input, int batch, int size,
                 double seconds) {
  c10::InferenceMode guard;
  at::Tensor one = torch::from_blob(const_cast<float*>(input.data()), {1, 3, size, size});
  at::Tensor x = one.expand({batch, 3, size, size}).contiguous();
  for (int i = 0; i < 3; ++i) m.forward({x});  // warm-up (the JIT profiles the first runs)
  auto t0 = Clock::now();
  long images = 0;
  while (seconds_since(t0) < seconds) {
    at::Tensor out = m.forward({x}).toTensor();
    images += out.size(0);
  }
  return images / seconds_since(t0);
}

// Images per second through the engine, closed loop with `inflight` requests.
double engine_round(Engine& e, const std::string& model, const std::vector<float>& input,
                    int batch, int inflight, double seconds) {
  std::mutex mu;
  std::condition_variable cv;
  long done = 0, failed = 0;
  auto cb = [&](ClassifyResult r) {
    std::lock_guard lock(mu);
    ++done;
    if (r.status != RequestStatus::Ok) ++failed;
    cv.notify_one();
  };
  auto submit = [&] {
    if (e.submit_raw(model, input, 1, cb) != 0) std::abort();
  };
  // Warm-up: one full batch.
  for (int i = 0; i < batch; ++i) submit();
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done >= batch; });
    done = 0;
  }
  for (int i = 0; i < inflight; ++i) submit();
  long submitted = inflight;
  auto t0 = Clock::now();
  long counted = 0;
  double elapsed = 0;
  std::unique_lock lock(mu);
  while ((elapsed = seconds_since(t0)) < seconds) {
    cv.wait(lock, [&] { return done > counted; });
    long fresh = done - counted;
    counted = done;
    lock.unlock();
    for (long i = 0; i < fresh; ++i) submit();
    submitted += fresh;
    lock.lock();
  }
  long completed = counted;
  // Fixed batching dispatches only full batches: top the queue up to a whole batch so the
  // drain ends (a partial last batch would wait forever).
  lock.unlock();
  for (; submitted % batch != 0; ++submitted) submit();
  lock.lock();
  cv.wait(lock, [&] { return done >= submitted; });  // drain before the next round
  if (failed) {
    std::fprintf(stderr, "bench_engine: %ld requests failed\n", failed);
    std::exit(1);
  }
  return completed / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  int batch = 8, threads = 2, rounds = 3, size = 224;
  double seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") file = v;
    else if (k == "--batch") batch = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--rounds") rounds = std::stoi(v);
    else if (k == "--seconds") seconds = std::stod(v);
    else if (k == "--size") size = std::stoi(v);
    else { std::fprintf(stderr, "bench_engine: unknown option %s\n", k.c_str()); return 2; }
  }
  if (file.empty() || batch < 1 || threads < 1) {
    std::fprintf(stderr, "usage: bench_engine --model FILE.pt [--batch N] [--threads N] "
                         "[--seconds S] [--rounds N] [--size PX]\n");
    return 2;
  }
  EngineOptions o;
  o.control.workers = 1;
  o.control.max_batch = static_cast<uint32_t>(batch);
  o.control.batching = {"fixed", PolicyParams(std::map<std::string, std::string>{{"size", std::to_string(batch)}})};
  o.intra_op_threads = threads;  // process-wide: applies to the raw loop as well
  o.device = "cpu";
  Engine engine(o);
  ModelSpec spec;
  spec.name = "bench";
  spec.file = file;
  spec.preprocess.input_width = spec.preprocess.input_height = size;
  ModelStatus st = engine.register_model(spec);
  std::printf("model=%s params=%.1fMB workspace=%.1fMB batch=%d intra_op_threads=%d "
              "at_get_num_threads=%d\n", file.c_str(), st.param_bytes / 1e6,
              st.workspace_bytes / 1e6, batch, threads, at::get_num_threads());

  torch::jit::Module raw = torch::jit::load(file);
  raw.eval();
  std::vector<float> input(static_cast<size_t>(3) * size * size);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;

  // The anchor runs on its own long-lived thread with the engine workers' per-thread LibTorch
  // settings: TorchScript graph optimization off (setGraphExecutorOptimize is thread-local),
  // so that both sides run the same graph executor.
  TaskThread raw_thread([] { torch::jit::setGraphExecutorOptimize(false); });
  std::printf("anchor: a forward loop on one thread, same module file, InferenceMode, same "
              "intra-op threads, graph optimizer off like the engine's workers, warmed up, "
              "one fixed input batch\n");
  auto raw_on_thread = [&] {
    std::promise<double> rate;
    raw_thread.post([&] { rate.set_value(raw_round(raw, input, batch, size, seconds)); });
    return rate.get_future().get();
  };
  double raw_sum = 0, engine_sum = 0;
  for (int r = 0; r < rounds; ++r) {
    const long f0 = minor_faults();
    double a = raw_on_thread();
    const long f1 = minor_faults();
    double b = engine_round(engine, "bench", input, batch, 3 * batch, seconds);
    const long f2 = minor_faults();
    raw_sum += a;
    engine_sum += b;
    std::printf("round=%d raw_images_per_s=%.2f engine_images_per_s=%.2f ratio=%.4f "
                "page_faults_raw=%ld page_faults_engine=%ld\n", r, a, b, b / a, f1 - f0, f2 - f1);
    std::fflush(stdout);
  }
  std::printf("ratio=%.4f raw_images_per_s=%.2f engine_images_per_s=%.2f\n",
              engine_sum / raw_sum, raw_sum / rounds, engine_sum / rounds);
  return 0;
}
