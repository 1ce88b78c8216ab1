#include "engine/control/types.h"

namespace servelab {

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::Disk: return "disk";
    case Tier::Host: return "host";
    case Tier::Device: return "device";
  }
  return "?";
}

bool parse_tier(const std::string& s, Tier* out) {
  if (s == "disk") *out = Tier::Disk;
  else if (s == "host") *out = Tier::Host;
  else if (s == "device") *out = Tier::Device;
  else return false;
  return true;
}

const char* status_name(RequestStatus s) {
  switch (s) {
    case RequestStatus::Ok: return "ok";
    case RequestStatus::Timeout: return "timeout";
    case RequestStatus::Rejected: return "rejected";
    case RequestStatus::Failed: return "failed";
    case RequestStatus::Cancelled: return "cancelled";
    case RequestStatus::Dropped: return "dropped";
  }
  return "?";
}

}  // namespace servelab
