#pragma once
// Result files (DESIGN.md, "Outputs"): HDF5 with /scenario (resolved YAML text), /requests,
// /timeseries/<replica>, /summary; CSV export of the same tables. Every file is written under a
// temporary name and renamed when complete, so an interrupted run never leaves a partial file.
#include <string>
#include <vector>

#include "sim/io/table.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::sim {

// A replica's time-series table name, one HDF5 link or file name: "pool/3" -> "pool_3"
// (/timeseries/pool_3, timeseries_pool_3.csv).
std::string timeseries_name(std::string replica);

Table requests_table(const RunResult& r);
Table timeseries_table(const TimeSeries& ts);
Table summary_table(const Summary& s);
Table replicas_table(const RunResult& r);
// Prefix-cache lookups by replica and tenant.
Table tenants_table(const RunResult& r);
// One row per conversation: turns, prompt tokens served from cache or recomputed, TTFT.
Table sessions_table(const RequestLog& log);

// Writes the HDF5 result file at `path` (atomically), with `report` (report_text) as /report.
// `scenario_text`, when given, is stored as /scenario instead of sc.resolved_yaml (a replay names
// its trace where --write-scenario keeps it, not the temporary it ran from); /provenance hashes
// the files sc names. Throws InputError or std::runtime_error on I/O failure.
void write_results_h5(const std::string& path, const Scenario& sc, const RunResult& r,
                      const Summary& s, const std::string& report,
                      const std::string* scenario_text = nullptr);

// Writes requests.csv, summary.csv, replicas.csv and timeseries_<replica>.csv into `dir`
// (created if needed); each file atomically.
void write_results_csv(const std::string& dir, const RunResult& r, const Summary& s);

void write_csv(const std::string& path, const Table& t);

// The tables of a run's result file, as declared (docs/outputs.md): name, description, columns
// with type, unit and description.
std::vector<TableDoc> run_table_docs();
// The tables written only with alert rules, and the binding resource.
Table alerts_table(const AlertReport& a);
Table alert_events_table(const AlertReport& a);
Table binding_table(const RunResult& r, const Summary& s);

}  // namespace kvfleet::sim
