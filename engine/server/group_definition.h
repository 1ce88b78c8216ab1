// A model group (ensemble, Rafiki section 5) as the HTTP API defines it. POST /groups body:
//   {"name": "g",
//    "members": ["a", "b", "c"],                      1..kMaxGroupMembers registered models
//    "accuracy": {"a": 0.95, "b": 0.97, "c": 0.98},   optional: every member, each in [0, 1]
//    "subset": {"name": "all" | "fixed" | "least-loaded", <parameters>},   optional: all
//    "dispatch": {"name": "greedy" | "clipper" | "rafiki-rl", <parameters>}}  optional
// With "dispatch" (not with "subset") the group keeps one queue of its requests and an
// ensemble dispatcher (engine/control/ensemble_dispatch.h) picks each batch's size and members
// (group_dispatch.h). Parameters are numbers, strings, booleans or lists of them; a dispatcher
// file parameter ("weights") is a server-side path that the server confines to --model-root.
// The vote of a group request goes to the label most answering members gave; a tie goes to
// the most accurate member's label (without accuracies: to the earliest member's label).
// Parsed and validated here: size, JSON shape, names (model_name_problem), duplicates, and
// the subset policy with its parameters (make_subset_policy). Whether the members exist is
// the server's business (it knows the models). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/control/ensemble.h"
#include "engine/control/policy_params.h"

namespace servelab::server {

// A POST /groups body larger than this is answered 413 before it is parsed.
constexpr size_t kMaxGroupBodyBytes = 16 << 10;

struct GroupDefinition {
  std::string name;
  std::vector<std::string> members;  // distinct valid model names, in the order given
  std::vector<double> accuracy;      // per member (members' order); empty when not given
  PolicySpec subset;                 // a registered subset policy; params as strings
  PolicySpec dispatch;               // a registered ensemble dispatcher; empty name: none

  // Member k's accuracy for the vote's tie-break: 0 for all when none was given.
  double accuracy_of(size_t k) const { return accuracy.empty() ? 0.0 : accuracy[k]; }
};

// Parses and validates a POST /groups body (or a definition stored by the registry). Throws
// HttpError: 413 over kMaxGroupBodyBytes, 400 with a user-facing message for anything else
// (malformed JSON, unknown key, bad name, duplicate member, too many or no members, bad
// accuracy, unknown subset policy or dispatcher or parameter, both subset and dispatch).
GroupDefinition parse_group_definition(std::string_view body);

// The definition as JSON, in the form parse_group_definition reads (GET /groups, the
// registry's stored text): parse_group_definition(group_definition_json(d).dump()) == d.
nlohmann::json group_definition_json(const GroupDefinition& d);

}  // namespace servelab::server
