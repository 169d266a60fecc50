-- reserve.lua - wrk's requests for the gateway benchmark
-- (tests/support/gateway_bench.sh): every request a reserve of one unit by a
-- new buyer with a new Idempotency-Key, over keep-alive HTTPS connections.
-- Environment: GW_BENCH_KEY (the shop's key), GW_BENCH_ITEM, GW_BENCH_LABEL.
-- At the end one line:
--   BENCH <label>_ok_s=... <label>_p50_ms=... <label>_p99_ms=... <label>_non2xx=... ...
local key = os.getenv("GW_BENCH_KEY")
local item = os.getenv("GW_BENCH_ITEM") or "hot"
local label = os.getenv("GW_BENCH_LABEL") or "gw"
local threads = {}
local id = 0

function setup(thread)
   id = id + 1
   thread:set("tid", id)
   table.insert(threads, thread)
end

function init(args)
   n = 0
   -- a prefix per run: keys never repeat between runs on the same tenant
   prefix = string.format("%s-%d-%d", label, os.time(), tid)
end

function request()
   n = n + 1
   local k = string.format("%s-%d", prefix, n)
   local body = string.format('{"item":"%s","buyer":"%s","qty":1}', item, k)
   return wrk.format("POST", "/v1/holds", {
      ["Authorization"] = "Bearer " .. key,
      ["Idempotency-Key"] = k,
      ["Content-Type"] = "application/json",
   }, body)
end

function done(summary, latency, requests)
   local s = summary.duration / 1e6
   local bad = summary.errors.status + summary.errors.connect + summary.errors.read
      + summary.errors.write + summary.errors.timeout
   local ok = summary.requests - summary.errors.status
   io.write(string.format(
      "BENCH %s_ok_s=%.0f %s_p50_ms=%.3f %s_p99_ms=%.3f %s_requests=%d %s_non2xx=%d %s_errors=%d %s_window_s=%.2f\n",
      label, ok / s, label, latency:percentile(50) / 1000, label, latency:percentile(99) / 1000,
      label, summary.requests, label, summary.errors.status, label, bad, label, s))
end
