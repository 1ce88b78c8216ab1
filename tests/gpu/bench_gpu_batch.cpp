// P5b batching: the engine's batched inference on CUDA for resnet18 and resnet50 at batch 1,
// 4, 16 and 64 against the best raw LibTorch loop on the same GPU. Every variant starts from
// the batch's b uint8 crops in separate host buffers (as requests arrive) and ends with the
// logits on the host (which synchronizes); the forward runs under InferenceMode.
//   raw:         the module alone: the crops gathered into one reused pinned buffer, one copy
//                to the device, normalization there (graph optimizer off and on, and off on a
//                thread prepared as an engine worker is: the best counts as the raw loop);
//   raw packed / raw staging: the raw loop with one of the executor's differences each (its
//                device module's tensors views into one packed copy; a pinned staging buffer
//                per batch from the caching host allocator): not counted as the raw loop;
//   raw control: a second raw loop of its own, identical to the first (optimizer off): how
//                far two equal loops differ here, the yardstick for every ratio below;
//   prebatched:  the raw loop given the batch already gathered (what the gather costs);
//   executor:    TorchExecutor::run on the batch's requests (the worker's call), on the main
//                thread; again on a thread prepared as an engine worker is (its own CUDA
//                stream), and on a plain thread (the default stream): what the thread costs;
//   engine:      the whole engine, one batch in flight: b requests submitted together, a
//                fixed-size batching policy, the controller, a worker thread, per-request
//                answers (softmax, top-1); the controller's time split of its requests says
//                where the batch's time went (queue: submit to dispatch; compute: dispatch to
//                the worker's answer, the worker's hand-off included);
//   engine q2:   one worker with two batches outstanding: the next batch waits in the queue
//                while one runs (the engine under load, one batch at a time on the GPU as in
//                the raw loop);
//   engine x2:   two workers and two batches in flight (each worker on its own CUDA stream).
// Variants alternate in rounds; each round times each variant for seconds_per_variant, and
// each round starts one variant further along the list, so that no variant always runs first
// or always follows the same one (the GPU's clocks follow the load before it). For the
// variants timed on one thread (raw, executor) the record also gives that thread's CPU time per
// batch and how often it was preempted: a launch-bound batch runs as fast as its thread issues.
#include <torch/script.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "engine/runtime/task_thread.h"
#include "engine/runtime/top_classes.h"
#include "tests/gpu/bench_gpu.h"
#include "tests/gpu/bench_gpu_loops.h"
#include "tests/gpu/gpu_env.h"

namespace servelab::gpu {
namespace {

using runtime::Input;

// Milliseconds the per-request answers (top-1 softmax, as the engine computes them after a
// batch) take for the batch's logits on this thread.
double answers_ms(const std::vector<std::vector<float>>& logits) {
  std::vector<runtime::ClassProbability> best;
  const int reps = 200;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r)
    for (const auto& row : logits) runtime::top_softmax(row, 1, best);
  return seconds_since(t0) / reps * 1e3;
}

// The variants, in the order each round measures them.
enum Variant { kRawOff, kRawOn, kRawWorker, kRawPacked, kRawStaging, kRawControl, kPrebatched,
               kExec, kExecWorker, kExecPlain, kEngine, kEngineQ2, kEngineX2, kVariants };

// One variant's paces over the rounds.
struct Rounds {
  std::vector<double> bps, cpu_ms, preempted_per_s;
  void add(Rate r) {
    bps.push_back(r.bps);
    cpu_ms.push_back(r.cpu_ms);
    preempted_per_s.push_back(r.preempted_per_s);
  }
  double pace() const { return median(bps); }
};
using AllRounds = Rounds[kVariants];

// The variants timed on one thread, by their record's key: their thread's CPU time per batch
// (median round) and involuntary context switches per second.
std::vector<std::pair<std::string, std::string>> thread_fields(const AllRounds& v) {
  const std::pair<const char*, Variant> named[] = {
      {"raw_opt_off", kRawOff}, {"raw_opt_on", kRawOn}, {"raw_worker_thread", kRawWorker},
      {"executor", kExec}, {"executor_worker_thread", kExecWorker},
      {"executor_plain_thread", kExecPlain}};
  std::vector<std::pair<std::string, std::string>> fields;
  std::printf("    thread CPU ms per batch (wall ms), preemptions/s:");
  for (const auto& [key, variant] : named) {
    const Rounds& r = v[variant];
    std::printf(" %s %.3f (%.3f) %.0f;", key, median(r.cpu_ms), 1e3 / r.pace(),
                median(r.preempted_per_s));
    fields.emplace_back(std::string(key) + "_cpu_ms", jnum(median(r.cpu_ms)));
    fields.emplace_back(std::string(key) + "_preempted_per_s", jnum(median(r.preempted_per_s)));
  }
  std::printf("\n");
  return fields;
}

// Milliseconds per forward spent issuing it (raw loops on the main thread, optimizer off).
struct IssueMs {
  double control = 0, packed = 0, staging = 0;
};

std::string batch_record(const char* model, size_t b, const AllRounds& v,
                         std::pair<double, double> split, double answers, IssueMs issue) {
  const double raw = std::max({v[kRawOff].pace(), v[kRawOn].pace(), v[kRawWorker].pace()});
  const double pre = v[kPrebatched].pace(), exec = v[kExec].pace();
  const double exec_worker = v[kExecWorker].pace(), exec_plain = v[kExecPlain].pace();
  const double eng = v[kEngine].pace(), q2 = v[kEngineQ2].pace(), eng2 = v[kEngineX2].pace();
  std::printf("P5b %-8s batch %2zu: raw %7.0f img/s (prebatched %7.0f) | executor %7.0f (%.3f) "
              "| engine %7.0f (%.3f, +%.3f ms/batch; queue %.3f, compute %.3f ms) "
              "| engine q2 %7.0f (%.3f) | engine x2 %7.0f (%.3f)\n", model, b, raw * b, pre * b,
              exec * b, exec / raw, eng * b, eng / raw, (1 / eng - 1 / raw) * 1e3, split.first,
              split.second, q2 * b, q2 / raw, eng2 * b, eng2 / raw);
  std::printf("    raw on a worker's thread %7.0f; executor on a worker's thread %7.0f (%.3f), "
              "on a plain thread %7.0f (%.3f); answers %.3f ms/batch\n"
              "    raw with the engine's device module %7.0f, with staging per batch %7.0f "
              "(raw opt off %7.0f, raw control %7.0f); issue ms per batch: control %.3f, "
              "device module %.3f, staging %.3f\n",
              v[kRawWorker].pace() * b, exec_worker * b, exec_worker / raw, exec_plain * b,
              exec_plain / raw, answers, v[kRawPacked].pace() * b, v[kRawStaging].pace() * b,
              v[kRawOff].pace() * b, v[kRawControl].pace() * b, issue.control, issue.packed,
              issue.staging);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"model", jstr(model)}, {"batch", jnum(double(b))},
      {"raw_opt_off_ips", jnum(v[kRawOff].pace() * b)},
      {"raw_opt_on_ips", jnum(v[kRawOn].pace() * b)},
      {"raw_worker_thread_ips", jnum(v[kRawWorker].pace() * b)}, {"raw_ips", jnum(raw * b)},
      {"raw_packed_module_ips", jnum(v[kRawPacked].pace() * b)},
      {"raw_staging_per_batch_ips", jnum(v[kRawStaging].pace() * b)},
      {"raw_control_ips", jnum(v[kRawControl].pace() * b)},
      {"raw_control_issue_ms", jnum(issue.control)},
      {"raw_packed_module_issue_ms", jnum(issue.packed)},
      {"raw_staging_per_batch_issue_ms", jnum(issue.staging)},
      {"prebatched_ips", jnum(pre * b)}, {"executor_ips", jnum(exec * b)},
      {"executor_worker_thread_ips", jnum(exec_worker * b)},
      {"executor_plain_thread_ips", jnum(exec_plain * b)}, {"answers_ms", jnum(answers)},
      {"engine_ips", jnum(eng * b)}, {"engine_q2_ips", jnum(q2 * b)},
      {"engine2_ips", jnum(eng2 * b)}, {"executor_ratio", jnum(exec / raw)},
      {"engine_ratio", jnum(eng / raw)}, {"engine_q2_ratio", jnum(q2 / raw)},
      {"engine2_ratio", jnum(eng2 / raw)}, {"engine_added_ms", jnum((1 / eng - 1 / raw) * 1e3)},
      {"executor_batch_ms", jnum(1e3 / exec)}, {"engine_batch_ms", jnum(1e3 / eng)},
      {"engine_queue_ms", jnum(split.first)}, {"engine_compute_ms", jnum(split.second)}};
  for (auto& f : thread_fields(v)) fields.push_back(std::move(f));
  return jobj(fields);
}

}  // namespace

void bench_batch(const BenchOptions& o) {
  std::vector<std::string> records;
  const double s = o.seconds_per_variant;
  for (const char* model : {"resnet18", "resnet50"}) {
    const runtime::ModelSpec spec = model_spec(model);
    for (size_t b : {1, 4, 16, 64}) {
      const BatchCrops batch(b);
      const std::vector<Input>& crops = batch.crops;
      const std::vector<const Input*>& ptrs = batch.ptrs;
      RawLoop raw(spec, crops, false, false), raw_packed(spec, crops, true, false),
          raw_staging(spec, crops, false, true), raw_control(spec, crops, false, false);
      auto exec = device_executor(spec, b);
      EngineLoop engine(spec, crops, 1, 1), engine_q2(spec, crops, 1, 2),
          engine2(spec, crops, 2, 2);
      runtime::TaskThread worker_like([&] { exec->prepare_thread(); });
      runtime::TaskThread plain([] { torch::jit::setGraphExecutorOptimize(false); });
      std::vector<std::vector<float>> out;
      auto exec_step = [&] { exec->run(0, Tier::Device, ptrs, out); };
      auto exec_rate = [&] { return timed_rate(exec_step, s); };
      // The main thread's variants run with the optimizer off (as the engine's workers do)
      // unless they say otherwise.
      auto on_main = [&](RawLoop& l, bool optimize = false) {
        torch::jit::setGraphExecutorOptimize(optimize);
        Rate r = timed_rate([&] { l.gather(), l.forward(); }, s);
        torch::jit::setGraphExecutorOptimize(false);
        return r;
      };
      auto engine_rate = [&](EngineLoop& e) { return Rate{e.batches_per_second(s)}; };
      const std::function<Rate()> measure[kVariants] = {
          [&] { return on_main(raw); },
          [&] { return on_main(raw, true); },
          [&] { return on_thread(worker_like, [&] { return on_main(raw); }); },
          [&] { return on_main(raw_packed); },
          [&] { return on_main(raw_staging); },
          [&] { return on_main(raw_control); },
          [&] { return timed_rate([&] { raw.forward(); }, s); },
          exec_rate,
          [&] { return on_thread(worker_like, exec_rate); },
          [&] { return on_thread(plain, exec_rate); },
          [&] { return engine_rate(engine); },
          [&] { return engine_rate(engine_q2); },
          [&] { return engine_rate(engine2); }};
      torch::jit::setGraphExecutorOptimize(false);
      AllRounds v;
      for (int r = 0; r < o.rounds; ++r)
        for (int i = 0; i < kVariants; ++i) {
          const int variant = (i + r) % kVariants;  // each round starts one further along
          v[variant].add(measure[variant]());
        }
      exec_step();
      const IssueMs issue{raw_control.issue_ms(), raw_packed.issue_ms(), raw_staging.issue_ms()};
      records.push_back(batch_record(model, b, v, engine.split_ms(), answers_ms(out), issue));
    }
  }
  write_records(o, "batch.json", records);
}

}  // namespace servelab::gpu
