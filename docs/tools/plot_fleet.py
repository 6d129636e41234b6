#!/usr/bin/python3
"""The fleet scenarios of docs/fleet.md: runs each comparison, prints Markdown tables and draws
the time plots into docs/img/.

Usage: docs/tools/plot_fleet.py KVFLEET_BINARY IMG_DIR
Needs Debian's python3-matplotlib. Takes a few minutes on two cores.
"""
import csv
import glob
import math
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pct(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * q
    f = math.floor(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)


def run(binary, tmp, scenario, sets, tag):
    d = os.path.join(tmp, tag)
    cmd = [binary, "run", os.path.join(ROOT, "scenarios", "fleet", scenario), "-q", "--csv", d]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    summary = next(csv.DictReader(open(os.path.join(d, "summary.csv"))))
    summary = {k: float(v) if v else float("nan") for k, v in summary.items()}
    return d, summary


def requests(d):
    return list(csv.DictReader(open(os.path.join(d, "requests.csv"))))


def windows(rows, width, end, key):
    """Per window of arrival time: p99 of `key` over completed requests."""
    out = []
    for w0 in range(0, int(end), width):
        sel = [float(r[key]) for r in rows if r["outcome"] == "ok" and r[key] and
               w0 <= float(r["arrival_s"]) < w0 + width]
        out.append((w0 + width / 2, pct(sel, 0.99)))
    return out


def ms(x):
    return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def routing(binary, tmp):
    print("### Routing: sticky sessions, bounded loads, prefix-aware scoring\n")
    rows = []
    for impl in ["session_affinity", "consistent_hash", "prefix_aware", "cache_aware",
                 "least_outstanding"]:
        _, s = run(binary, tmp, "routing-hotspot.yaml", [f"router.impl={impl}"], impl)
        rows.append([impl, f"{100 * s['prefix_cache_hit_rate']:.1f}%",
                     f"{s['hotspot_mean']:.2f}", f"{s['hotspot_max']:.2f}",
                     ms(s["time_to_first_token_p50_s"]), ms(s["time_to_first_token_p99_s"]),
                     ms(s["e2e_request_latency_p99_s"])])
    table(["router", "prefix hits", "hotspot mean", "hotspot max", "TTFT p50", "TTFT p99",
           "E2E p99"], rows)


def staleness(binary, tmp):
    print("### Stale load signals\n")
    rows = []
    for label, sets in [("least_kv_usage, always current", ["simulation.scrape_interval_s=0"]),
                        ("least_kv_usage, 50 ms", ["simulation.scrape_interval_s=0.05"]),
                        ("least_kv_usage, 250 ms", ["simulation.scrape_interval_s=0.25"]),
                        ("least_kv_usage, 1 s", ["simulation.scrape_interval_s=1"]),
                        ("power_of_two, 1 s", ["simulation.scrape_interval_s=1",
                                               "router.impl=power_of_two"])]:
        _, s = run(binary, tmp, "stale-signals.yaml", sets, label.replace(" ", "_"))
        rows.append([label, f"{s['hotspot_mean']:.2f}", f"{s['hotspot_max']:.2f}",
                     ms(s["time_to_first_token_p50_s"]), ms(s["time_to_first_token_p99_s"])])
    table(["router, scrape interval", "hotspot mean", "hotspot max", "TTFT p50", "TTFT p99"], rows)


def node_loss(binary, tmp, img):
    print("### Node loss and admission control on the re-prefill wave\n")
    variants = [("no admission control", []),
                ("admission on KV demand (0.8)", ["pools[0].admission.enabled=true"]),
                ("admission on prefill tokens (6,000/replica)",
                 ["pools[0].admission.enabled=true", "pools[0].admission.kv_demand_limit=0",
                  "pools[0].admission.max_prefill_tokens=6000"])]
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    rows = []
    for label, sets in variants:
        d, s = run(binary, tmp, "node-loss.yaml", sets, label.replace(" ", "_")[:20])
        reqs = requests(d)
        during = [r for r in reqs if r["outcome"] == "ok" and 300 <= float(r["arrival_s"]) < 480]
        t = [float(r["ttft_s"]) for r in during]
        tp = [float(r["tpot_s"]) for r in during if r["tpot_s"]]
        pre = sum(int(r["num_preemptions"]) for r in reqs if 300 <= float(r["arrival_s"]) < 480)
        before = [float(r["tpot_s"]) for r in reqs if r["outcome"] == "ok" and r["tpot_s"] and
                  float(r["arrival_s"]) < 300]
        rows.append([label, ms(pct(before, 0.99)), ms(pct(t, 0.5)), ms(pct(t, 0.99)),
                     ms(pct(tp, 0.99)), str(pre),
                     f"{s['failed']:.0f}", f"{s['retries']:.0f}"])
        for k, key in enumerate(["ttft_s", "tpot_s"]):
            w = windows(reqs, 30, 800, key)
            ax[k].plot([x for x, _ in w], [y for _, y in w], label=label)
    for k, name in enumerate(["TTFT p99 (s)", "TPOT p99 (s)"]):
        ax[k].axvline(300, color="grey", ls="--")
        ax[k].set_xlabel("arrival time (s); replica 1 fails at 300 s")
        ax[k].set_ylabel(name)
        ax[k].set_yscale("log")
    ax[0].legend(fontsize=8)
    fig.suptitle("node-loss.yaml: a replica fails; the wave hits the survivors")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "fleet_node_loss.png"), dpi=110)
    table(["variant", "TPOT p99 (0-300 s)", "TTFT p50 (300-480 s)", "TTFT p99 (300-480 s)", "TPOT p99 (300-480 s)",
           "preemptions (300-480 s)", "failed attempts", "retries"], rows)


def deploy(binary, tmp):
    print("### Rolling deploy with and without draining\n")
    rows = []
    for label, drain in [("without draining", "false"), ("with draining", "true")]:
        d, s = run(binary, tmp, "deploy-no-drain.yaml", [f"pools[0].deploy.drain={drain}"],
                   "deploy_" + drain)
        reqs = requests(d)
        during = [float(r["ttft_s"]) for r in reqs
                  if r["outcome"] == "ok" and 120 <= float(r["arrival_s"]) < 300]
        rows.append([label, f"{s['failed']:.0f}", f"{s['wasted_gpu_s']:.0f}", ms(pct(during, 0.99)),
                     ms(s["client_e2e_latency_p99_s"])])
    table(["deploy", "failed attempts", "GPU-s wasted", "TTFT p99 during the deploy",
           "E2E p99 seen by clients"], rows)


def retry_storm(binary, tmp, img):
    print("### Retry storm\n")
    variants = [("no retries", ["client.max_attempts=1"]),
                ("5 attempts, no budget", []),
                ("5 attempts, budget 0.1", ["client.retry_budget_ratio=0.1"]),
                ("budget 0.1 + timeouts cancel", ["client.retry_budget_ratio=0.1",
                                                  "client.timeout_cancels=true"])]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    rows = []
    for label, sets in variants:
        d, s = run(binary, tmp, "retry-storm.yaml", sets, label.replace(" ", "_")[:24])
        reqs = requests(d)
        end = max(float(r["arrival_s"]) for r in reqs)
        counts = [0] * (int(end) // 10 + 1)
        for r in reqs:
            counts[int(float(r["arrival_s"])) // 10] += 1
        ax.plot([10 * i + 5 for i in range(len(counts))], [c / 10 for c in counts], label=label)
        attempts = s["requests"] / max(s["logical_requests"], 1)
        rows.append([label, f"{attempts:.2f}", f"{100 * s['logical_ok'] / s['logical_requests']:.1f}%",
                     f"{s['gpu_hours']:.2f}", f"{s['wasted_gpu_s']:.0f}",
                     f"{s['duration_s']:.0f} s"])
    t = [x for x in range(0, 1200, 5)]
    ax.plot(t, [60 * (1 + 0.5 * math.sin(2 * math.pi * x / 600)) for x in t], "k:",
            label="offered (first attempts)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("attempts sent per second")
    ax.legend(fontsize=8)
    ax.set_title("retry-storm.yaml: timeouts at the peak start a storm; a budget caps it")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "fleet_retry_storm.png"), dpi=110)
    table(["clients", "attempts per request", "requests that succeed", "GPU-hours",
           "GPU-s wasted", "last reply"], rows)


def tidal(binary, tmp, img):
    print("### Tidal traffic and the autoscaler\n")
    variants = [("autoscaled, outstanding target 150", []),
                ("autoscaled, waiting target 2", ["pools[0].autoscale.metric=queue",
                                                  "pools[0].autoscale.target=2"]),
                ("autoscaled, KV usage target 0.5", ["pools[0].autoscale.metric=kv",
                                                     "pools[0].autoscale.target=0.5"]),
                ("fixed 8 replicas", ["pools[0].autoscale.enabled=false",
                                      "pools[0].replicas=8"])]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    rows = []
    for label, sets in variants:
        d, s = run(binary, tmp, "tidal-autoscale.yaml", sets, label.replace(" ", "_")[:24])
        rows.append([label, f"{s['gpu_hours']:.2f}", f"${s['cost']:.2f}",
                     ms(s["time_to_first_token_p50_s"]), ms(s["time_to_first_token_p99_s"]),
                     f"{s['scale_ups']:.0f} / {s['scale_downs']:.0f}"])
        if label.startswith("fixed"):
            continue
        series = [list(csv.DictReader(open(f))) for f in
                  sorted(glob.glob(os.path.join(d, "timeseries_*.csv")))]
        t = [float(x["t_s"]) for x in series[0]]
        up = [sum(int(ts[i]["available"]) for ts in series if i < len(ts)) for i in range(len(t))]
        ax.step(t, up, where="post", label=label)
    t = list(range(0, 7200, 30))
    ax2 = ax.twinx()
    ax2.plot(t, [150 * (1 + 0.8 * math.sin(2 * math.pi * (x + 5400) / 7200)) for x in t], "k:")
    ax2.set_ylabel("arrival rate (requests/s, dotted)")
    ax.set_xlim(0, 7200)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("replicas up")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("tidal-autoscale.yaml: replicas up (steps) against the tide (dotted)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "fleet_tidal_autoscale.png"), dpi=110)
    table(["pool", "GPU-hours", "cost", "TTFT p50", "TTFT p99", "scale-ups / downs"], rows)


def long_documents(binary, tmp):
    print("### Long documents: shared replicas or a pool of their own\n")
    rows = []
    for label, scenario in [("4 shared replicas", "long-documents-shared.yaml"),
                            ("2 for questions + 2 for documents", "long-documents-separate.yaml")]:
        d, s = run(binary, tmp, scenario, [], scenario[:-5])
        reqs = [r for r in requests(d) if r["outcome"] == "ok"]
        short = [float(r["ttft_s"]) for r in reqs if int(r["input_tokens"]) < 8000]
        long = [float(r["ttft_s"]) for r in reqs if int(r["input_tokens"]) >= 8000]
        rows.append([label, ms(pct(short, 0.5)), ms(pct(short, 0.99)), ms(pct(long, 0.5)),
                     ms(pct(long, 0.99)), f"${s['cost']:.2f}"])
    table(["fleet", "questions TTFT p50", "questions TTFT p99", "documents TTFT p50",
           "documents TTFT p99", "cost"], rows)


def disaggregation(binary, tmp):
    print("### Disaggregated prefill and decode\n")
    rows = []
    for label, scenario in [("8 unified replicas", "pd-unified.yaml"),
                            ("4 prefill + 4 decode", "pd-disaggregated.yaml")]:
        _, s = run(binary, tmp, scenario, [], scenario[:-5])
        rows.append([label, ms(s["time_to_first_token_p50_s"]), ms(s["time_to_first_token_p99_s"]),
                     ms(s["inter_token_latency_mean_s"]), ms(s["inter_token_latency_p99_s"]),
                     ms(s["e2e_request_latency_p99_s"])])
    table(["fleet", "TTFT p50", "TTFT p99", "TPOT mean", "TPOT p99", "E2E p99"], rows)


def main(binary, img):
    with tempfile.TemporaryDirectory() as tmp:
        routing(binary, tmp)
        staleness(binary, tmp)
        node_loss(binary, tmp, img)
        deploy(binary, tmp)
        retry_storm(binary, tmp, img)
        tidal(binary, tmp, img)
        long_documents(binary, tmp)
        disaggregation(binary, tmp)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
