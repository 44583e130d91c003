-- wrk script for the bench's wrk client (bench/wrk-load.ts) and for runs by hand. Each
-- request is the same: WRK_METHOD (POST) to WRK_PATH with the body of WRK_BODY_FILE, or by
-- default a create of a ~1 KiB ConfigMap with generateName in the namespace "default" (so
-- every request makes a new object). The bearer token comes from KUBESHARD_TOKEN.
--   KUBESHARD_TOKEN=... wrk -t1 -c50 -d8s --latency -s bench/wrk/load.lua https://127.0.0.1:6443
-- done() prints one JSON line that bench/wrk-load.ts reads.
local token = os.getenv("KUBESHARD_TOKEN") or ""
local bodyFile = os.getenv("WRK_BODY_FILE")
wrk.method = os.getenv("WRK_METHOD") or "POST"
wrk.path = os.getenv("WRK_PATH") or "/api/v1/namespaces/default/configmaps"
if token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
if bodyFile then
  local f = assert(io.open(bodyFile, "rb"))
  wrk.body = f:read("*a")
  f:close()
elseif wrk.method == "POST" then
  wrk.body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"wrk-"},"data":{"payload":"' .. string.rep("x", 1000) .. '"}}'
end
if wrk.body then wrk.headers["Content-Type"] = "application/json" end

function done(summary, latency, requests)
  local ms = function(p) return latency:percentile(p) / 1000 end
  local e = summary.errors
  io.write(string.format('WRK-JSON {"requests":%d,"seconds":%.3f,"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"non2xx":%d,"errors":%d}\n',
    summary.requests, summary.duration / 1e6, ms(50), ms(90), ms(99), ms(99.9), e.status, e.connect + e.read + e.write + e.timeout))
end
