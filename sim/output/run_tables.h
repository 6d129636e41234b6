#pragma once
// The column declarations of a run's tables (sim/output/run_tables.cpp): /requests, one row per
// attempt; /replicas, one row per replica; /timeseries/<replica>, one row per sample.
#include "sim/io/table.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::sim {

const TableSpec<RunResult>& requests_spec();
const TableSpec<RunResult>& replicas_spec();
const TableSpec<TimeSeries>& timeseries_spec();

}  // namespace kvfleet::sim
