#!/usr/bin/env python3
"""A tiny OpenAI-compatible mock model server whose timing is known exactly.

kvfleet uses it to produce real result folders of benchmark clients (inference-perf,
vllm bench, ...) against a server whose per-request schedule is logged, so that the
latency definitions of each client version can be checked number by number
(tests/data/conformance/README.md).

Dependencies: Python >= 3.9 and aiohttp (PyPI) only.

Run:
    python3 mock_server.py --port 8000 --config mock.json --log mock_log.jsonl
    python3 mock_server.py --port 8000 --ttft 0.12 --token-gap 0.015 --tokens-per-event 2

Endpoints (127.0.0.1 only): POST /v1/completions, POST /v1/chat/completions (stream true or
false; `stream_options.include_usage` adds a final usage chunk, `choices: []`, as vLLM does),
GET /v1/models, GET /health, GET /metrics (minimal Prometheus text); any other path is a 404
and is logged too.

Timing (the JSON file's keys; command-line flags override them), all relative to the moment the
request handler starts (headers and body received):
  ttft_s            first content event is sent at  t0 + ttft_s
  token_gap_s       decode time of one token; content event j (0-based) is sent at
                    t0 + ttft_s + j * tokens_per_event * token_gap_s
  tokens_per_event  output tokens carried by one SSE content event (the last may carry fewer)
  end_gap_s         the usage chunk (if asked for) and `data: [DONE]` follow the last content
                    event after end_gap_s; a non-streamed response is sent whole at the time the
                    streamed [DONE] would have been
  role_chunk        chat only: "with_first" (vLLM: the role-only delta is sent right before the
                    first content event), "immediate" (at t0), or "none"
  prompt_tokens_extra  added to usage.prompt_tokens (e.g. a chat template's tokens), so a client
                    that reports the server's usage can be told from one that counts the prompt
  fail_every_k      every k-th request (1-based arrival order) answers HTTP 500 at t0 (0: never)
  stall_every_k, stall_s, stall_phase   every k-th request stalls stall_s seconds, either before
                    any byte is sent ("before_headers") or after the first content event
                    ("after_first"), then goes on; a client timeout shorter than that fires
Output: exactly max_tokens (or max_completion_tokens, default 16) tokens, eos ignored; the text
is "tok0 tok1 tok2 ...", one whitespace word per token; prompt tokens are whitespace words.

Log: one JSON line per request: seq, path, stream, include_usage, max_tokens, prompt_words,
usage_prompt_tokens, output_tokens, status, rule, t0 (time.perf_counter(), which on Linux is
CLOCK_MONOTONIC, the clock inference-perf stamps with, so the two can be compared directly),
t0_wall (time.time()), events [[perf_counter, kind, tokens], ...] stamped right before each write
(kind: role, content, usage, done, body, error), t_end (after the last write) and t_end_wall.
"""
import argparse
import asyncio
import json
import time
import uuid

from aiohttp import web

DEFAULTS = {
    "model": "mock-model", "ttft_s": 0.120, "token_gap_s": 0.015, "tokens_per_event": 1,
    "end_gap_s": 0.030, "role_chunk": "with_first", "prompt_tokens_extra": 0,
    "fail_every_k": 0, "stall_every_k": 0, "stall_s": 0.0, "stall_phase": "before_headers",
    "max_model_len": 8192,
}


class Mock:
    def __init__(self, cfg, log_path):
        self.cfg = cfg
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.seq = 0

    def write_log(self, rec):
        if self.log:
            self.log.write(json.dumps(rec) + "\n")

    @staticmethod
    def words(text):
        return len(text.split()) if isinstance(text, str) else 0

    def prompt_words(self, body, chat):
        if not chat:
            p = body.get("prompt", "")
            return sum(self.words(x) for x in p) if isinstance(p, list) else self.words(p)
        n = 0
        for m in body.get("messages", []):
            c = m.get("content")
            if isinstance(c, list):
                n += sum(self.words(part.get("text", "")) for part in c if isinstance(part, dict))
            else:
                n += self.words(c)
        return n

    async def sleep_until(self, t):
        d = t - time.perf_counter()
        if d > 0:
            await asyncio.sleep(d)

    async def handle(self, request):
        t0, t0_wall = time.perf_counter(), time.time()
        self.seq += 1
        seq, cfg = self.seq, self.cfg
        chat = request.path.endswith("/chat/completions")
        rec = {"seq": seq, "path": request.path, "t0": t0, "t0_wall": t0_wall, "events": []}
        try:
            body = await request.json()
        except Exception:
            body = {}
        stream = bool(body.get("stream", False))
        opts = body.get("stream_options") or {}
        inc = opts.get("include_usage", False)
        include_usage = stream and (inc is True or str(inc).lower() == "true")
        n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        words = self.prompt_words(body, chat)
        usage = {"prompt_tokens": words + int(cfg["prompt_tokens_extra"]), "completion_tokens": n}
        usage["total_tokens"] = usage["prompt_tokens"] + n
        rec.update(stream=stream, include_usage=include_usage, max_tokens=n, prompt_words=words,
                   usage_prompt_tokens=usage["prompt_tokens"], output_tokens=n, rule=None)
        k_fail, k_stall = int(cfg["fail_every_k"]), int(cfg["stall_every_k"])
        stall = cfg["stall_phase"] if k_stall and seq % k_stall == 0 else None
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:16]
        created = int(t0_wall)
        obj = "chat.completion" if chat else "text_completion"
        ev = rec["events"]

        def finish(status):
            rec["status"], rec["t_end"], rec["t_end_wall"] = status, time.perf_counter(), time.time()
            self.write_log(rec)

        if k_fail and seq % k_fail == 0:
            rec["rule"] = "fail_every_k"
            ev.append([time.perf_counter(), "error", 0])
            resp = web.json_response({"object": "error", "message": "mock: injected failure",
                                      "type": "InternalServerError", "param": None, "code": 500},
                                     status=500)
            finish(500)
            return resp
        if stall == "before_headers":
            rec["rule"] = "stall_before_headers"
            await asyncio.sleep(float(cfg["stall_s"]))
            t0 += float(cfg["stall_s"])  # the schedule below starts after the stall
            if request.transport is None or request.transport.is_closing():
                finish("client_closed")  # the client gave up (its timeout) during the stall
                return web.Response(status=499)

        tpe, gap = max(1, int(cfg["tokens_per_event"])), float(cfg["token_gap_s"])
        groups = [list(range(i, min(i + tpe, n))) for i in range(0, n, tpe)]
        t_first = t0 + float(cfg["ttft_s"])
        times = [t_first + j * tpe * gap for j in range(len(groups))]
        t_done = (times[-1] if times else t_first) + float(cfg["end_gap_s"])
        text_of = lambda g: "".join(("tok%d" if i == 0 else " tok%d") % i for i in g)

        if not stream:
            await self.sleep_until(t_done)
            text = text_of(range(n))
            choice = ({"index": 0, "message": {"role": "assistant", "content": text},
                       "logprobs": None, "finish_reason": "length", "stop_reason": None} if chat else
                      {"index": 0, "text": text, "logprobs": None, "finish_reason": "length",
                       "stop_reason": None})
            ev.append([time.perf_counter(), "body", n])
            resp = web.json_response({"id": rid, "object": obj, "created": created,
                                      "model": cfg["model"], "choices": [choice], "usage": usage})
            finish(200)
            return resp

        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        resp.enable_chunked_encoding()
        status = 200
        try:
            await resp.prepare(request)
            chunk_obj = "chat.completion.chunk" if chat else "text_completion"

            async def send(payload, kind, ntok):
                ev.append([time.perf_counter(), kind, ntok])
                data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
                await resp.write(("data: %s\n\n" % data).encode())

            def chunk(choices, **extra):
                d = {"id": rid, "object": chunk_obj, "created": created, "model": cfg["model"],
                     "choices": choices}
                d.update(extra)
                return d

            role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                    "finish_reason": None}
            if chat and cfg["role_chunk"] == "immediate":
                await send(chunk([role]), "role", 0)
            for j, (g, t) in enumerate(zip(groups, times)):
                await self.sleep_until(t)
                if j == 0 and chat and cfg["role_chunk"] == "with_first":
                    await send(chunk([role]), "role", 0)
                fin = "length" if j == len(groups) - 1 else None
                c = ({"index": 0, "delta": {"content": text_of(g)}, "logprobs": None,
                      "finish_reason": fin} if chat else
                     {"index": 0, "text": text_of(g), "logprobs": None, "finish_reason": fin,
                      "stop_reason": None})
                await send(chunk([c]), "content", len(g))
                if j == 0 and stall == "after_first":
                    rec["rule"] = "stall_after_first"
                    await asyncio.sleep(float(cfg["stall_s"]))
                    if request.transport is None or request.transport.is_closing():
                        raise ConnectionResetError("client closed during the stall")
                    shift = float(cfg["stall_s"])
                    for i in range(1, len(times)):  # in place: the loop's zip reads this list
                        times[i] += shift
                    t_done += shift
            await self.sleep_until(t_done)
            if include_usage:
                await send(chunk([], usage=usage), "usage", 0)
            await send("[DONE]", "done", 0)
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            status = "client_closed"
        finally:
            finish(status)
        return resp

    async def models(self, request):
        return web.json_response({"object": "list", "data": [{
            "id": self.cfg["model"], "object": "model", "created": int(time.time()),
            "owned_by": "kvfleet-mock", "root": self.cfg["model"], "parent": None,
            "max_model_len": self.cfg["max_model_len"]}]})

    async def health(self, request):
        return web.Response(status=200)

    async def metrics(self, request):
        text = ("# HELP mock_requests_total Requests received by the mock.\n"
                "# TYPE mock_requests_total counter\nmock_requests_total %d\n" % self.seq)
        return web.Response(text=text, content_type="text/plain")

    async def other(self, request):
        self.write_log({"seq": None, "path": request.path, "method": request.method,
                        "t0": time.perf_counter(), "t0_wall": time.time(), "status": 404})
        return web.json_response({"error": "not found"}, status=404)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--config", help="JSON file of timing keys (see the module doc)")
    ap.add_argument("--log", help="JSONL request log to append to")
    for k, v in DEFAULTS.items():
        flag = "--" + (k[:-2] if k.endswith("_s") else k).replace("_", "-")
        ap.add_argument(flag, dest=k, type=type(v), default=None)
    a = ap.parse_args()
    if a.host not in ("127.0.0.1", "localhost", "::1"):
        ap.error("the mock listens on the loopback only")
    cfg = dict(DEFAULTS)
    if a.config:
        with open(a.config) as f:
            cfg.update(json.load(f))
    cfg.update({k: getattr(a, k) for k in DEFAULTS if getattr(a, k) is not None})
    mock = Mock(cfg, a.log)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/completions", mock.handle)
    app.router.add_post("/v1/chat/completions", mock.handle)
    app.router.add_get("/v1/models", mock.models)
    app.router.add_get("/health", mock.health)
    app.router.add_get("/metrics", mock.metrics)
    app.router.add_route("*", "/{tail:.*}", mock.other)
    print("mock: %s" % json.dumps(cfg), flush=True)
    web.run_app(app, host=a.host, port=a.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
