// Helpers of the model-group tests: the three real digits models of scripts/digits_models.py
// (shared labels "0".."9", measured accuracy in their manifests), group definitions, and
// Rafiki's vote computed apart from the server, as the ground truth of a group's answer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/server/http_client.h"

namespace servelab::testing {

// digits_linear, digits_mlp, digits_cnn (in ascending accuracy).
extern const std::vector<std::string> kDigits;

// Registers kDigits under their own names (fails the test, saying how to make them, when the
// digits models are missing).
void register_digits(HttpClient& c);
double manifest_accuracy(const std::string& model);
// A POST /groups body with the members' manifest accuracies.
nlohmann::json group_body(const std::string& name, const std::vector<std::string>& members,
                          const nlohmann::json& subset = {{"name", "all"}});
// The top-1 label of `model` for `image`, asked directly (the test fails on any error).
std::string top1(HttpClient& c, const std::string& model, const std::string& image);
// The label with the most votes; a tie goes to the label whose voters include the most
// accurate member (then the earlier member).
std::string expected_vote(const std::vector<std::string>& labels, const std::vector<double>& acc);
// The sample images of models/images plus a generated 8x8 gray PNG.
std::vector<std::string> sample_images();

}  // namespace servelab::testing
