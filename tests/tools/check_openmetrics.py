#!/usr/bin/env python3
"""Parses a kvfleet OpenMetrics backfill file with the Prometheus client library's own parser
(Debian's python3-prometheus-client) and checks it: vLLM's families are there, timestamps rise,
histogram buckets are cumulative and end at _count, the last E2E _count equals the number
of completed requests, the DCGM-named utilisation gauges are ratios with DCGM's labels, and the
replicas' declared counters (kvfleet:<name>) have one sample per engine. Usage: check_openmetrics.py FILE COMPLETED_REQUESTS"""
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

path, completed = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    text = f.read()

# python3-prometheus-client 0.16's parser drops a histogram's series at later timestamps as
# "duplicates due to timestamp truncation" (its de-duplication set is not cleared when the
# timestamp changes), so each histogram MetricPoint (one engine, one timestamp) is parsed as a
# document of its own; everything else is parsed as one document.
blocks, current = [], None
for line in text.splitlines():
    if line.startswith("# TYPE"):
        current = {"head": [], "lines": [], "type": line.split()[3]}
        blocks.append(current)
    if line == "# EOF":
        continue
    (current["head"] if line.startswith("#") else current["lines"]).append(line)
plain = []
families = {}
for b in blocks:
    if b["type"] != "histogram":
        plain += b["head"] + b["lines"]
        continue
    points = {}
    for line in b["lines"]:
        engine = line.split('engine="', 1)[1].split('"', 1)[0]
        points.setdefault((engine, line.rsplit(" ", 1)[1]), []).append(line)
    merged = None
    for lines in points.values():
        (fam,) = text_string_to_metric_families("\n".join(b["head"] + lines) + "\n# EOF\n")
        if merged is None:
            merged = fam
        else:
            merged.samples.extend(fam.samples)
    families[merged.name] = merged
for fam in text_string_to_metric_families("\n".join(plain) + "\n# EOF\n"):
    families[fam.name] = fam
want = {
    "vllm:num_requests_running": "gauge", "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge", "vllm:num_preemptions": "counter",
    "vllm:prompt_tokens": "counter", "vllm:generation_tokens": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge", "DCGM_FI_PROF_DRAM_ACTIVE": "gauge",
}
for name, kind in want.items():
    assert name in families, f"missing family {name}"
    assert families[name].type == kind, f"{name}: {families[name].type} != {kind}"
for name, fam in families.items():
    last = {}
    for s in fam.samples:
        key = (s.name, tuple(sorted(s.labels.items())))
        t = float(s.timestamp)
        assert key not in last or t >= last[key], f"{name}: time goes back"
        last[key] = t
    assert all(0 <= s.value for s in fam.samples), f"{name}: negative value"
for name in ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
    samples = families[name].samples
    assert all(s.value <= 1 for s in samples), f"{name}: a ratio above 1"
    assert any(s.value > 0 for s in samples), f"{name}: never above 0"
    assert all("Hostname" in s.labels and "gpu" in s.labels for s in samples), f"{name}: labels"
for name in ("vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"):
    by_time = {}
    for s in families[name].samples:
        by_time.setdefault((s.labels.get("engine"), float(s.timestamp)), []).append(s)
    for (engine, t), samples in by_time.items():
        buckets = [s.value for s in samples if s.name.endswith("_bucket")]
        count = [s.value for s in samples if s.name.endswith("_count")][0]
        assert buckets == sorted(buckets), f"{name} at {t}: buckets not cumulative"
        assert buckets[-1] == count, f"{name} at {t}: +Inf bucket {buckets[-1]} != count {count}"
final = {}
for s in families["vllm:e2e_request_latency_seconds"].samples:
    if s.name.endswith("_count"):
        final[s.labels["engine"]] = s.value
assert sum(final.values()) == completed, f"e2e count {sum(final.values())} != {completed}"
# The replicas' declared counters (EngineStats::declare, .total): kvfleet:<name>, one sample per
# engine at the end of the run; steps is one of them and every engine stepped.
engines = set(final)
declared = {n: f for n, f in families.items() if n.startswith("kvfleet:")}
assert "kvfleet:steps" in declared and declared["kvfleet:steps"].type == "counter", "kvfleet:steps"
for name, fam in declared.items():
    assert {s.labels["engine"] for s in fam.samples} == engines, f"{name}: not one per engine"
    assert len(fam.samples) == len(engines), f"{name}: more than one sample per engine"
assert all(s.value > 0 for s in declared["kvfleet:steps"].samples), "an engine with no steps"
print(f"{path}: {len(families)} families parse; {int(sum(final.values()))} requests in e2e")
