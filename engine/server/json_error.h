// Why a JSON body did not parse, for a 400 that says what to fix: the key path of the value
// where parsing stopped (`accuracy.b`) and the parser's reason, e.g. a number out of the range
// of a double (1e400). Stateless; any thread.
#pragma once

#include <string>
#include <string_view>

namespace servelab::server {

// "" when `text` is valid JSON; otherwise "'PATH' is out of range (TOKEN)" for a number that
// overflows a double, or "not valid JSON at byte N (near 'PATH'): REASON". Echoed text is
// truncated (echo_value in http_message.h).
std::string json_error(std::string_view text);

}  // namespace servelab::server
