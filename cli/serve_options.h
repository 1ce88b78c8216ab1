// The option table of `servelab serve`: names, defaults and help text.
#pragma once

#include <boost/program_options.hpp>

namespace servelab::cli {

boost::program_options::options_description serve_options();

}  // namespace servelab::cli
