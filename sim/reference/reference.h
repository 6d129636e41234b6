#pragma once
// The scenario reference (docs/scenarios.md, `kvfleet schema`): every parameter from its
// declaration, the ranges by unit, the limits on derived sizes and the exit-code contract. It sits
// above the simulation and the sweeps because it states their limits.
#include <string>

namespace kvfleet::sim {

std::string scenario_reference_markdown();

// The output reference (docs/outputs.md, `kvfleet outputs`): every file kvfleet writes, its
// datasets and their columns with type, unit and description, from the tables' declarations.
std::string outputs_reference_markdown();

}  // namespace kvfleet::sim
