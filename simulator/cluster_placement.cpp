#include "simulator/cluster_placement.h"

namespace servelab::sim {

route::Placement place_models(const SimulationSetup& setup, const Schedule* schedule) {
  const PolicySpec& spec = setup.cluster.placement;
  std::vector<route::PlacedModel> models;
  const std::vector<double> counts =
      schedule && route::placement_reads_load(spec.name)
          ? schedule->target_counts(setup.models.size() + setup.groups.size())
          : std::vector<double>{};
  for (size_t i = 0; i < setup.models.size(); ++i) {
    const SimModel& m = setup.models[i];
    models.push_back({m.name, m.profile.size_bytes, counts.empty() ? 1.0 : counts[i]});
  }
  route::Placement p = route::make_placement(spec, models, setup.cluster.servers);
  if (!setup.groups.empty() && !p.everywhere())
    throw ConfigError("placement '" + spec.name + "' leaves some models off some servers; "
                      "a run with model groups needs every model on every server");
  return p;
}

}  // namespace servelab::sim
