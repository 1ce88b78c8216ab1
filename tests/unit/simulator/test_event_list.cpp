// Event lists and the Simulation facade: ordering, stability of equal times, and the same
// cases over every event-list implementation.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "simulator/simulation.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

// Records (time, tag) of every event it receives; optionally schedules follow-ups.
struct Recorder {
  Simulation* sim = nullptr;
  std::vector<std::pair<Time, uint64_t>> seen;
  bool chain = false;
  void on_event(uint64_t tag, Time now) {
    REQUIRE(sim->now() == now);
    seen.push_back({now, tag});
    if (chain && tag < 5) sim->schedule<&Recorder::on_event>(now, this, tag + 100);  // runs after queued
  }
};

// A typed event argument of two fields, as the simulator's parts use them.
struct Pair {
  uint32_t a;
  float b;
};
struct PairRecorder {
  std::vector<std::pair<uint32_t, float>> seen;
  void on_pair(Pair p, Time) { seen.push_back({p.a, p.b}); }
};

}  // namespace

TEST_CASE("event lists pop in (time, sequence) order", "[simulator][event_list]") {
  for (const std::string& kind : event_list_names()) {
    SECTION(kind) {
      auto list = make_event_list(kind);
      std::mt19937_64 rng(7);
      // As in a simulation, nothing is inserted before the last event popped (the radix list
      // relies on it); many equal times, and times as far as 2^40 ahead.
      std::uniform_int_distribution<int> t(0, 50);
      std::vector<Event> events;
      Time now = 0;
      for (uint64_t i = 0; i < 5000; ++i) {
        Time ahead = i % 97 == 0 ? std::ldexp(1.0, int(i % 41)) : double(t(rng));
        Event e{now + ahead, i, nullptr, nullptr, i};
        events.push_back(e);
        list->insert(e);
        if (i % 3 == 0) {  // interleave pops with inserts
          // The radix list does not keep the sequence: the payload names the event.
          const Event popped = list->pop();
          auto it = std::find_if(events.begin(), events.end(),
                                 [&](const Event& x) { return x.arg == popped.arg; });
          REQUIRE(it != events.end());
          const Event top = *it;
          REQUIRE(popped.time == top.time);
          now = top.time;
          events.erase(it);
          for (const Event& x : events) REQUIRE_FALSE(earlier(x, top));
        }
      }
      REQUIRE(list->size() == events.size());
      std::stable_sort(events.begin(), events.end(),
                       [](const Event& a, const Event& b) { return a.time < b.time; });
      for (const Event& expected : events) {
        REQUIRE(list->top_time() == expected.time);
        Event e = list->pop();
        REQUIRE(e.arg == expected.arg);
        REQUIRE(e.time == expected.time);
      }
      REQUIRE(list->empty());
    }
  }
}

TEST_CASE("few pending events: every list keeps order while their count crosses small sizes",
          "[simulator][event_list]") {
  // Bursts of inserts and pops keep 0..20 events pending, so the radix list moves between its
  // small array (up to 8) and its buckets (back at 4) many times; every list must pop what the
  // ordered set pops.
  for (const std::string& kind : event_list_names()) {
    SECTION(kind) {
      auto list = make_event_list(kind);
      OrderedSetEventList truth;
      std::mt19937_64 rng(11);
      std::uniform_int_distribution<int> burst(1, 12), ahead(0, 30);
      Time now = 0;
      uint64_t seq = 0;
      for (int round = 0; round < 3000; ++round) {
        const bool grow = list->size() < 4 || (list->size() < 20 && rng() % 2 == 0);
        for (int k = burst(rng); k > 0; --k) {
          if (grow) {
            Event e{now + ahead(rng) * 0.25, seq++, nullptr, nullptr, seq};
            list->insert(e);
            truth.insert(e);
          } else if (!list->empty()) {
            REQUIRE(list->top_time() == truth.top_time());
            Event a = list->pop(), b = truth.pop();
            REQUIRE(a.arg == b.arg);
            now = a.time;
          }
        }
        REQUIRE(list->size() == truth.size());
      }
    }
  }
}

TEST_CASE("equal times run in scheduling order, including events scheduled at now",
          "[simulator][event_list]") {
  for (const std::string& kind : event_list_names()) {
    SECTION(kind) {
      Simulation sim(make_event_list(kind));
      Recorder r;
      r.sim = &sim;
      r.chain = true;
      for (uint64_t tag = 0; tag < 5; ++tag) sim.schedule<&Recorder::on_event>(1.0, &r, tag);
      sim.schedule<&Recorder::on_event>(0.5, &r, 50);
      sim.schedule<&Recorder::on_event>(2.0, &r, 60);
      sim.run();
      std::vector<uint64_t> tags;
      for (auto& [t, tag] : r.seen) tags.push_back(tag);
      REQUIRE(tags == std::vector<uint64_t>{50, 0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 60});
      REQUIRE(sim.now() == 2.0);
      REQUIRE(sim.events_processed() == 12);
    }
  }
}

TEST_CASE("the clock never goes back and run(until) stops before later events",
          "[simulator][event_list]") {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.schedule<&Recorder::on_event>(3, &r, 1);
  sim.schedule<&Recorder::on_event>(1, &r, 2);
  sim.run(2.0);
  REQUIRE(r.seen.size() == 1);
  REQUIRE(sim.now() == 1);
  REQUIRE(sim.pending() == 1);
  sim.schedule<&Recorder::on_event>(0.5, &r, 3);  // in the past: clamped to now
  sim.run();
  REQUIRE(r.seen[1] == std::pair<Time, uint64_t>{1, 3});
  REQUIRE(r.seen[2] == std::pair<Time, uint64_t>{3, 1});
}

// A random walk of inserts and pops whose pending count swings between 1 and 4096, with
// exact ties, times one ulp apart and times far ahead: every list against the ordered set.
TEST_CASE("every list pops as the ordered set does through ties, near ties and far times",
          "[simulator][event_list]") {
  for (const std::string& kind : event_list_names()) {
    SECTION(kind) {
      for (uint64_t seed = 0; seed < 4; ++seed) {
        std::mt19937_64 rng(seed);
        auto list = make_event_list(kind);
        OrderedSetEventList truth;
        Time now = 0;
        uint64_t seq = 0;
        for (int step = 0; step < 20000; ++step) {
          const size_t target = size_t(1) << (step / 2000 % 13);
          const bool insert = list->empty() || (list->size() < target ? rng() % 4 != 0
                                                                      : rng() % 4 == 0);
          if (insert) {
            Time ahead = 0;
            switch (rng() % 5) {
              case 0: ahead = 0; break;
              case 1: ahead = double(rng() % 8) * 1e-3; break;
              case 2: ahead = std::ldexp(1.0, int(rng() % 40) - 20); break;
              case 3: ahead = std::nextafter(now, 1e300) - now; break;
              default: ahead = double(rng() % 1000) * 1e-6; break;
            }
            const Event e{now + ahead, seq++, nullptr, nullptr, seq};
            list->insert(e);
            truth.insert(e);
          } else {
            REQUIRE(list->top_time() == truth.top_time());
            const Event got = list->pop(), want = truth.pop();
            REQUIRE(got.time == want.time);
            REQUIRE(got.arg == want.arg);  // unique per event: the sequence + 1
            now = got.time;
          }
          REQUIRE(list->size() == truth.size());
        }
      }
    }
  }
}

namespace {
// Each event schedules the next of its chain at the same instant until `left` runs out, so
// thousands of events pass through one time while later ones wait.
struct Burst {
  Simulation* sim = nullptr;
  std::vector<std::pair<Time, uint64_t>> seen;
  void on_event(uint64_t left, Time now) {
    seen.push_back({now, left});
    if (left > 0 && left % 1000 != 0) sim->schedule<&Burst::on_event>(now, this, left - 1);
  }
};

std::vector<std::pair<Time, uint64_t>> run_bursts(const std::string& list) {
  Simulation sim(make_event_list(list));
  Burst b;
  b.sim = &sim;
  for (uint64_t i = 0; i < 20; ++i) sim.schedule<&Burst::on_event>(1.0 + 0.5 * double(i % 4), &b, 1000 * i + 999);
  sim.run();
  return b.seen;
}
}  // namespace

TEST_CASE("long streams of events at one instant keep their order in every list",
          "[simulator][event_list]") {
  const auto expected = run_bursts("set");
  REQUIRE(expected.size() == 20 * 1000);
  for (const std::string& kind : event_list_names()) {
    SECTION(kind) { REQUIRE(run_bursts(kind) == expected); }
  }
}

TEST_CASE("an event scheduled after run(until) stopped goes before the later pending ones",
          "[simulator][event_list]") {
  for (const std::string& kind : event_list_names()) {
    SECTION(kind) {
      Simulation sim(make_event_list(kind));
      Recorder r;
      r.sim = &sim;
      // 20 pending: past the radix list's small array, in its buckets.
      for (uint64_t tag = 0; tag < 20; ++tag) sim.schedule<&Recorder::on_event>(1.0 + tag, &r, tag);
      sim.run(1.5);  // runs the event at 1, stops in front of the one at 2
      REQUIRE(r.seen.size() == 1);
      REQUIRE(sim.now() == 1.0);
      sim.schedule<&Recorder::on_event>(1.75, &r, 100);
      sim.schedule<&Recorder::on_event>(1.5, &r, 101);
      sim.run();
      std::vector<uint64_t> tags;
      for (auto& [t, tag] : r.seen) tags.push_back(tag);
      std::vector<uint64_t> expected{0, 101, 100};
      for (uint64_t tag = 1; tag < 20; ++tag) expected.push_back(tag);
      REQUIRE(tags == expected);
    }
  }
}

TEST_CASE("two simulations coexist without sharing state", "[simulator][event_list]") {
  Simulation a, b;
  Recorder ra, rb;
  ra.sim = &a;
  rb.sim = &b;
  a.schedule<&Recorder::on_event>(1, &ra, 1);
  b.schedule<&Recorder::on_event>(5, &rb, 2);
  a.run_one();
  REQUIRE(a.now() == 1);
  REQUIRE(b.now() == 0);
  b.run();
  REQUIRE(b.now() == 5);
  REQUIRE(ra.seen.size() == 1);
  REQUIRE(rb.seen.size() == 1);
}

TEST_CASE("an event carries its typed argument by value", "[simulator][event_list]") {
  Simulation sim;
  PairRecorder r;
  sim.schedule<&PairRecorder::on_pair>(2, &r, Pair{7, 0.5f});
  sim.schedule<&PairRecorder::on_pair>(1, &r, Pair{UINT32_MAX, -3.25f});
  sim.run();
  REQUIRE(r.seen == std::vector<std::pair<uint32_t, float>>{{UINT32_MAX, -3.25f}, {7, 0.5f}});
}

TEST_CASE("an unknown event list is a clear error", "[simulator][event_list]") {
  CHECK_THROWS_WITH(make_event_list("calendar"), Catch::Contains("known: radix, quad, heap, set"));
}
