-- wrk script of npm run bench: sends requests prepared by the bench, read from a file (each one
-- ends with a NUL byte), so that wrk spends nothing per request beyond a table lookup.
--   wrk ... -s wrk-requests.lua <origin> -- <requests file> <cycle|once> <threads>
-- cycle: every thread goes round all the requests.
-- once: thread i takes every n-th one from the i-th on and sends each once (a second DELETE of a
-- webhook would be a 404); a connection that finds none left waits out the run, and the run's
-- active time ends when the last one stopped.
-- When it finishes it prints one BENCH_RESULT line of JSON for the bench to read.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *time);
]]
local CLOCK_MONOTONIC = 1
local timespec = ffi.new("bench_timespec")
local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, timespec)
  return tonumber(timespec.tv_sec) + tonumber(timespec.tv_nsec) / 1e9
end

local function cpu_ticks()
  local file = io.open("/proc/self/stat", "r")
  local stat = file:read("*a")
  file:close()
  -- utime and stime are the 14th and 15th fields; the 2nd, the command name, is in parentheses.
  local after_name = string.sub(stat, string.find(stat, ")", 1, true) + 2)
  local fields = {}
  for field in string.gmatch(after_name, "%S+") do fields[#fields + 1] = field end
  return tonumber(fields[12]) + tonumber(fields[13])
end

local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
  threads[#threads + 1] = thread
end

local requests = {}
local next_request = 1
local once = false

function init(args)
  local file = assert(io.open(args[1], "rb"))
  local data = file:read("*a")
  file:close()
  once = args[2] == "once"
  local stride = tonumber(args[3])
  local index = thread_index or 0
  local position = 0
  local start = 1
  while true do
    local stop = string.find(data, "\0", start, true)
    if not stop then break end
    if not once or position % stride == index then
      requests[#requests + 1] = string.sub(data, start, stop - 1)
    end
    position = position + 1
    start = stop + 1
  end
  if once then
    -- wrk calls the first thread's request() once before the run to check it: that call must not
    -- use one up.
    if index == 0 then next_request = 0 end
    delay = function()
      if next_request > #requests then
        ran_out_at = now()
        return 1e9
      end
      return 0
    end
  end
  -- The CPU spent reading the file is not the load's: done() counts from here.
  ticks_after_init = cpu_ticks()
end

function request()
  local prepared = requests[math.max(next_request, 1)]
  next_request = next_request + 1
  if not once and next_request > #requests then next_request = 1 end
  return prepared
end

function done(summary, latency)
  local ticks_before = 0
  local ran_out_at = nil
  for _, thread in ipairs(threads) do
    ticks_before = math.max(ticks_before, thread:get("ticks_after_init") or 0)
    local at = thread:get("ran_out_at")
    if at then ran_out_at = math.max(ran_out_at or 0, at) end
  end
  -- summary.duration ends as done() is called; a run that ran out was active until it did.
  local active_us = summary.duration
  if ran_out_at then active_us = summary.duration - (now() - ran_out_at) * 1e6 end
  local errors = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"completed":%d,"activeUs":%d,"ranOut":%s,"failures":%d,"p50Us":%d,"p99Us":%d,"cpuTicks":%d}\n',
    summary.requests, active_us, ran_out_at and "true" or "false",
    errors.connect + errors.read + errors.write + errors.status + errors.timeout,
    latency:percentile(50), latency:percentile(99), cpu_ticks() - ticks_before))
end
