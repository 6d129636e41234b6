#!/usr/bin/env python3
"""Checks an inference-perf result folder against the mock server's logged schedule.

    python3 check_inference_perf.py tests/data/conformance/inference-perf-<commit>-<case> [...]

Each folder holds what inference-perf wrote (config.yaml, *_lifecycle_metrics.json), the mock's
timing (mock.json) and its request log (mock_log.jsonl: the send time of every SSE event on
CLOCK_MONOTONIC, the clock inference-perf's time.perf_counter() reads). For every request the
mock served, this script rebuilds the timestamps each inference-perf era would have recorded
and the latencies each era's formulas give (README.md beside the folders):

  line   (<= 3631096, Nov 2025): one stamp per line read; an SSE event is "data: ...\\n" plus a
         blank line, so two stamps per event ([DONE] too; chat stops at [DONE] and skips its
         blank line). TTFT = t[0] - start, TPOT = (t[-1] - t[0]) / (len(t) - 1), ITL = diffs.
  event  (3631096 .. 3b882ba/49e26a6, Nov 2025 - Apr 2026): one stamp per SSE event, [DONE],
         the role-only and the usage chunk included; same formulas.
  token  (>= 49e26a6, Apr 2026): content events only, each expanded to one stamp per token it
         carries; TPOT = (t[-1] - t[0]) / (output tokens - 1).
  NTPOT = E2E / output tokens (the client's count when the per-request file gives it) and
  E2E = end - start in every era.

Start and end are the client's (per_request_lifecycle_metrics.json, matched to the mock's
requests by time) when that file is there; otherwise the mock's receive time and last write
stand in for them (TTFT and E2E then read a few ms low: connection setup and client overhead).
It prints, per metric, the mean the folder reports next to the mean each era predicts.
Python 3 standard library only.
"""
import json
import os
import sys


def era_stamps(era, rec, chat):
    ev = rec["events"]
    if era == "token":
        return [t for t, kind, ntok in ev if kind == "content" for _ in range(ntok)]
    if era == "event":
        return [t for t, kind, _ in ev]
    out = []
    for t, kind, _ in ev:  # line era: data line + blank line
        out.append(t)
        if not (chat and kind == "done"):
            out.append(t)
    return out


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def client_output_tokens(c):
    if not c:
        return None
    info = c.get("info", {})
    rm = info.get("response_metrics") or info.get("response_info") or info
    return rm.get("output_tokens")


def load_per_request(folder):
    p = os.path.join(folder, "per_request_lifecycle_metrics.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def check(folder):
    with open(os.path.join(folder, "mock_log.jsonl")) as f:
        log = [json.loads(x) for x in f if x.strip()]
    log = [r for r in log if r.get("seq") and r.get("status") == 200]
    with open(os.path.join(folder, "summary_lifecycle_metrics.json")) as f:
        summary = json.load(f)
    cfg_text = open(os.path.join(folder, "config.yaml")).read()
    chat = "type: chat" in cfg_text
    stream = any(r["stream"] for r in log)
    per_req = load_per_request(folder)
    ok_client = [r for r in (per_req or []) if not r.get("error")]
    matched, pairs = {}, []
    for r in log:  # the client's start precedes the mock's receive, its end follows the last write
        for i, c in enumerate(ok_client):
            if 0 <= r["t0"] - c["start_time"] < 0.5 and -0.01 <= c["end_time"] - r["t_end"] < 0.5:
                pairs.append((r["t0"] - c["start_time"] + c["end_time"] - r["t_end"], r["seq"], i))
    used = set()
    for _, seq, i in sorted(pairs):  # greedy, closest pairs first, each record used once
        if seq not in matched and i not in used:
            matched[seq] = ok_client[i]
            used.add(i)
    rows = {}
    for era in ("line", "event", "token"):
        ttft, tpot, itl, e2e, ntpot = [], [], [], [], []
        for r in log:
            c = matched.get(r["seq"])
            start = c["start_time"] if c else r["t0"]
            end = c["end_time"] if c else r["t_end"]
            n = r["output_tokens"]
            n_client = client_output_tokens(c) or n  # what the client counted, when it says
            e2e.append(end - start)
            ntpot.append((end - start) / n_client)
            if not stream:
                continue
            t = era_stamps(era, r, chat)
            ttft.append(t[0] - start)
            denom = (n - 1) if era == "token" else (len(t) - 1)
            tpot.append((t[-1] - t[0]) / denom)
            itl.extend(b - a for a, b in zip(t, t[1:]))
        rows[era] = {"time_to_first_token": mean(ttft), "time_per_output_token": mean(tpot),
                     "inter_token_latency": mean(itl), "request_latency": mean(e2e),
                     "normalized_time_per_output_token": mean(ntpot)}
    lat = summary["successes"].get("latency", {})
    print("%s: %d requests served (200), %d matched to the client's per-request records%s" % (
        os.path.basename(folder.rstrip("/")), len(log), len(matched),
        "" if per_req is not None else " (no per-request file: start/end from the mock)"))
    print("  %-34s %10s %10s %10s %10s" % ("metric (mean, s)", "reported", "line", "event", "token"))
    for k in rows["line"]:
        rep = (lat.get(k) or {}).get("mean") if isinstance(lat.get(k), dict) else None
        fmt = lambda v: "%10s" % "-" if v is None else "%10.5f" % v
        print("  %-34s %s %s %s %s" % (k, fmt(rep), fmt(rows["line"][k]), fmt(rows["event"][k]),
                                       fmt(rows["token"][k])))
    if matched:
        by_seq = {r["seq"]: r for r in log}
        pre = [by_seq[q]["t0"] - c["start_time"] for q, c in matched.items()]
        post = [c["end_time"] - by_seq[q]["t_end"] for q, c in matched.items()]
        print("  client start -> mock receive: mean %.4f s (min %.4f, max %.4f); mock last write ->"
              " client end: mean %.4f s" % (mean(pre), min(pre), max(pre), mean(post)))
    if per_req is not None:  # stamp counts, when the version stores them per request
        counts = []
        for r in log:
            c = matched.get(r["seq"])
            info = (c or {}).get("info", {})
            rm = info.get("response_metrics") or info.get("response_info") or info
            if c and rm.get("output_token_times") is not None:
                counts.append((len(rm["output_token_times"]), r["output_tokens"],
                               sum(1 for e in r["events"] if e[1] == "content"), len(r["events"])))
        if counts:
            print("  stamps per request (recorded, n tokens, content events, all events):",
                  sorted(set(counts)))


if __name__ == "__main__":
    for d in sys.argv[1:]:
        check(d)
