#include "cli/serve_option_checks.h"

#include <string>
#include <typeinfo>
#include <utility>

namespace servelab::cli {
namespace po = boost::program_options;

// Boost reads "-1" for an unsigned option as 4294967295, which a range check would then
// report: refuse a negative value of an unsigned option as the user wrote it.
void refuse_negative_unsigned(const po::parsed_options& parsed) {
  static const std::type_info* const kUnsigned[] = {&typeid(unsigned short), &typeid(unsigned),
                                                    &typeid(unsigned long),
                                                    &typeid(unsigned long long)};
  for (const po::option& opt : parsed.options) {
    const auto* d = parsed.description->find_nothrow(opt.string_key, false);
    const auto* typed = d ? dynamic_cast<const po::typed_value_base*>(d->semantic().get())
                          : nullptr;
    if (!typed) continue;
    bool is_unsigned = false;
    for (const auto* t : kUnsigned) is_unsigned = is_unsigned || typed->value_type() == *t;
    for (const std::string& v : opt.value) {
      const size_t first = v.find_first_not_of(" \t");
      if (is_unsigned && first != std::string::npos && v[first] == '-') {
        throw ConfigError("--" + opt.string_key + " must not be negative (got " + v + ")");
      }
    }
  }
}

void check_engine_options(const po::variables_map& vm) {
  for (const auto& [option, range] :
       {std::pair{"workers", config::kWorkers}, {"contexts", config::kContexts},
        {"max-batch", config::kMaxBatch}, {"queue-bound", config::kQueueBound}}) {
    if (vm.count(option)) check_range(option, vm[option].as<uint32_t>(), range);
  }
  for (const auto& [option, range] : {std::pair{"quantum-ms", config::kQuantumMs},
                                      {"request-timeout-ms", config::kRequestTimeoutMs}}) {
    if (vm.count(option)) check_range(option, vm[option].as<double>(), range);
  }
  check_range<int>("intra-op-threads", vm["intra-op-threads"].as<int>(), 1, 256);
}

}  // namespace servelab::cli
