// What a served batch pays that the profiler's batch does not: the executor's run() of one
// model at batch 1, timed alone, on a thread prepared as an engine worker is, in the shapes
// around it that differ between the profiler and a server at one request in flight:
//   back-to-back:  the profiler's loop: the same preprocessed input, batch after batch;
//   fresh inputs:  a different preprocessed input each time (as each request brings its own);
//   idle gap:      the thread sleeps --gap-ms between batches (a round trip's pause);
//   decoded there: the request image decoded and preprocessed on another thread first (the
//                  server's IO thread), then the batch on this one, as at one in flight;
//   decoded here:  the same on this thread (its caches see the decode first);
//   core busy:     another thread spins while the batch runs (a second core kept busy, as the
//                  load generator, the IO threads and the controller keep it while serving).
// The modes take turns batch by batch, so a machine's swings reach all alike; each prints its
// median batch time per round, and its ratio to back-to-back's within each round (median and
// range over the rounds). Turns batch by batch cannot see what a mode does to the batches
// after it (a thread that sleeps between batches may resume on a slower core, and the next
// mode's batch runs there too): `--turns block` runs each mode's batches of a round in one
// block instead, so back-to-back is truly back to back.
//
//   bench_serve_gap --model models/squeezenet1_1.pt [--image models/images/gradient.jpg]
//                   [--size 224] [--threads 1] [--batches 30] [--rounds 6] [--gap-ms 3]
//                   [--turns batch|block]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/executor.h"
#include "engine/runtime/preprocess.h"
#include "engine/runtime/task_thread.h"

using namespace servelab;
using namespace servelab::runtime;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string model = "models/squeezenet1_1.pt";
  std::string image = "models/images/gradient.jpg";
  int size = 224, threads = 1, batches = 30, rounds = 6;
  double gap_ms = 3;
  bool blocks = false;  // --turns block: each mode's batches of a round back to back
};

// The shapes, in the order each turn runs them.
enum Mode { kBackToBack, kFreshInputs, kIdleGap, kDecodedThere, kDecodedHere, kCoreBusy, kModes };
constexpr const char* kModeNames[kModes] = {"back-to-back", "fresh inputs", "idle gap",
                                            "decoded there", "decoded here", "core busy"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The whole bench on one thread prepared as an engine worker; `io` plays the IO thread.
struct Bench {
  const Options& o;
  std::unique_ptr<Executor> exec;
  ModelSpec spec;
  std::string image;
  std::vector<Input> inputs;  // distinct copies of the request's preprocessed input
  TaskThread io;
  std::vector<std::vector<float>> out;
  std::atomic<bool> spin{false}, stop{false};
  std::thread spinner;  // spins while `spin` is set, naps otherwise

  explicit Bench(const Options& opts) : o(opts), exec(make_torch_executor("cpu", o.threads)) {
    spec.name = "m";
    spec.file = o.model;
    spec.preprocess.input_height = spec.preprocess.input_width = o.size;
    image = read_bytes(o.image);
    for (int i = 0; i < 32; ++i) inputs.push_back(preprocess_image(image, spec.preprocess, true));
    exec->prepare_thread();
    exec->add(0, spec, 1, 1);
    spinner = std::thread([this] {
      while (!stop.load()) {
        if (!spin.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  ~Bench() {
    stop = true;
    spinner.join();
  }

  double timed_run(const Input& in) {
    std::vector<const Input*> batch{&in};
    const auto t0 = Clock::now();
    exec->run(0, Tier::Host, batch, out);
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  Input decoded_on_io() {
    std::promise<Input> p;
    io.post([&] { p.set_value(preprocess_image(image, spec.preprocess, true)); });
    return p.get_future().get();
  }

  // Milliseconds of one batch of mode `m` (the i-th of its round).
  double one_batch(Mode m, int i) {
    switch (m) {
      case kBackToBack: return timed_run(inputs[0]);
      case kFreshInputs: return timed_run(inputs[size_t(i) % inputs.size()]);
      case kIdleGap:
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.gap_ms));
        return timed_run(inputs[0]);
      case kDecodedThere: return timed_run(decoded_on_io());
      case kDecodedHere: return timed_run(preprocess_image(image, spec.preprocess, true));
      case kCoreBusy: {
        spin = true;
        const double ms = timed_run(inputs[0]);
        spin = false;
        return ms;
      }
      case kModes: break;
    }
    throw std::logic_error("bench_serve_gap: no such mode");
  }
};

// Each round runs the modes in turn, one batch each, `o.batches` times (after one untimed
// turn): the machine's swings, slower than a turn, reach every mode alike.
void run(const Options& o) {
  Bench b(o);
  std::vector<double> ratios[kModes];  // per round, over back-to-back's
  for (int r = 0; r < o.rounds; ++r) {
    std::vector<double> round[kModes];
    auto turn = [&](int m, int i) {  // batch i of mode m; i = -1: untimed
      const double ms = b.one_batch(Mode(m), i + 1);
      if (i >= 0) round[m].push_back(ms);
    };
    if (o.blocks) {
      for (int m = 0; m < kModes; ++m)
        for (int i = -1; i < o.batches; ++i) turn(m, i);
    } else {
      for (int i = -1; i < o.batches; ++i)
        for (int m = 0; m < kModes; ++m) turn(m, i);
    }
    const double base = median(round[kBackToBack]);
    std::printf("round %d:", r);
    for (int m = 0; m < kModes; ++m) {
      std::printf(" %s %.2f ms;", kModeNames[m], median(round[m]));
      ratios[m].push_back(median(round[m]) / base);
    }
    std::printf("\n");
  }
  // The machine may change speed between rounds (a shared VM's cores switch speed state for
  // seconds at a time), so modes are compared within each round.
  for (int m = 0; m < kModes; ++m) {
    auto [lo, hi] = std::minmax_element(ratios[m].begin(), ratios[m].end());
    std::printf("%-14s %.3f of back-to-back (median of the rounds; %.3f-%.3f)\n", kModeNames[m],
                median(ratios[m]), *lo, *hi);
  }
}

// Options from `--name value` pairs; throws on an unknown name, a missing or bad value.
Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("option " + k + " needs a value");
    const std::string v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--image") o.image = v;
    else if (k == "--size") o.size = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--batches") o.batches = std::stoi(v);
    else if (k == "--rounds") o.rounds = std::stoi(v);
    else if (k == "--gap-ms") o.gap_ms = std::stod(v);
    else if (k == "--turns") {
      if (v != "batch" && v != "block") throw std::invalid_argument("--turns: batch or block");
      o.blocks = v == "block";
    }
    else throw std::invalid_argument("unknown option " + k);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse_options(argc, argv);
    std::promise<void> done;  // the bench runs on a thread of its own, as a worker does
    std::thread([&] {
      try {
        run(o);
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    }).join();
    done.get_future().get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_serve_gap: %s\n", e.what());
    return 1;
  }
  return 0;
}
