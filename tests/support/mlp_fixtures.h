// Hand-made networks for tests of learned policies (rafiki-rl): their choices are known
// without training.
#pragma once

#include <cstddef>
#include <vector>

#include "learn/mlp.h"

namespace servelab::testutil {

// A network that ignores the state (zero weights) and whose bias favours action `pick`.
inline learn::Mlp constant_choice(size_t inputs, size_t actions, size_t pick) {
  learn::DenseLayer l{inputs, actions, std::vector<float>(inputs * actions, 0.0f),
                      std::vector<float>(actions, 0.0f)};
  l.bias[pick] = 1;
  return learn::Mlp({l});
}

}  // namespace servelab::testutil
