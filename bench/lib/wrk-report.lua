-- wrk's end-of-run hook: print the run's figures as one JSON line (prefixed "WRKJSON ") so that
-- bench/lib/wrk.mjs reads exact numbers, including the latency percentiles on the bench's grid,
-- instead of wrk's rounded human output. Latencies are in microseconds.
done = function(summary, latency, requests)
  local grid = {1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9}
  local pct = {}
  for _, p in ipairs(grid) do
    pct[#pct + 1] = string.format('[%g,%d]', p, latency:percentile(p))
  end
  pct[#pct + 1] = string.format('[100,%d]', latency.max)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency":{"min":%d,"max":%d,"mean":%.2f,"stdev":%.2f,"dist":[%s]}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev, table.concat(pct, ',')))
end
