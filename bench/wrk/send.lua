-- wrk script: POST message/send to the "instant" agent, a fresh messageId and no contextId per
-- request (each request starts a new task that completes at once).
-- Counts answers whose task completed; any other answer (a JSON-RPC error, another state) is
-- counted as an error and the first one is kept. done() prints one line: BENCH_JSON {...}.
--   wrk -t1 -c32 -d10s --latency --timeout 10s -s bench/wrk/send.lua http://127.0.0.1:PORT/

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  completed = 0
  errors = 0
  first_error = ""
  prefix = string.format("%d-%d-%d-", tid, os.time(), math.random(1, 1000000000))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local id = prefix .. counter
  local body = '{"jsonrpc":"2.0","id":"' .. id .. '","method":"message/send","params":{"message":'
    .. '{"kind":"message","messageId":"' .. id .. '","role":"user","parts":[{"kind":"text","text":"go"}]},'
    .. '"metadata":{"agentId":"instant"}}}'
  return wrk.format(nil, "/", nil, body)
end

function response(status, headers, body)
  if status == 200 and string.find(body, '"state":"completed"', 1, true) then
    completed = completed + 1
  else
    errors = errors + 1
    if first_error == "" then
      first_error = status .. " " .. string.sub(body, 1, 300)
    end
  end
end

local function quote(s)
  return '"' .. string.gsub(string.gsub(s, '\\', '\\\\'), '"', '\\"') .. '"'
end

function done(summary, latency, requests)
  local ok, bad, sample = 0, 0, ""
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("completed")
    bad = bad + thread:get("errors")
    local e = thread:get("first_error")
    if sample == "" and e ~= "" then sample = e end
  end
  local s = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"completed":%d,"errors":%d,'
      .. '"socket_errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,"first_error":%s}\n',
    summary.requests, summary.duration, ok, bad,
    s.connect + s.read + s.write + s.timeout + s.status,
    latency:percentile(50), latency:percentile(99), latency.max, quote(sample)))
end
