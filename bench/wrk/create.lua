-- wrk script: POST a ConfigMap of ~1 KiB with generateName (each request creates a new object).
-- The token comes from the environment: KUBESHARD_TOKEN; the namespace from WRK_NAMESPACE (default).
local token = os.getenv("KUBESHARD_TOKEN") or ""
local ns = os.getenv("WRK_NAMESPACE") or "default"
wrk.method = "POST"
wrk.path = "/api/v1/namespaces/" .. ns .. "/configmaps"
wrk.headers["Content-Type"] = "application/json"
if token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
wrk.body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"wrk-"},"data":{"payload":"' .. string.rep("x", 900) .. '"}}'

local non2xx = 0
response = function(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end
