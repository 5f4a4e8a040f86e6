-- work.lua - the Lua workload of test_funcs_lua.sh and bench_funcs.sh: the
-- parser (load), the VM, tables, strings and patterns, closures,
-- metatables, coroutines, errors (pcall: a longjmp out of nested C calls)
-- and the collector. Deterministic; `lua work.lua N` scales it; its CPU time goes to stderr.
local n = tonumber(arg and arg[1]) or 20

local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end

local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({ x = a.x + b.x, y = a.y + b.y }, Vec) end
Vec.__tostring = function(v) return string.format("(%d,%d)", v.x, v.y) end
local function vec(x, y) return setmetatable({ x = x, y = y }, Vec) end

local function deep(k) if k == 0 then error({ code = 7 }) end return deep(k - 1) + 1 end

local function gen(k)
	return coroutine.wrap(function() for i = 1, k do coroutine.yield(i * i) end end)
end

local t0 = os.clock()
local total = 0
for round = 1, n do
	-- the parser and code generator
	local src = {}
	for i = 1, 40 do
		src[#src + 1] = string.format("local v%d = %d * (%d + x) .. 'k%d'", i, i, round, i)
	end
	local f = assert(load("local x = ... " .. table.concat(src, " ") .. " return v40", "chunk" .. round))
	total = total + #f(round)
	-- tables and sorting with a comparator
	local t = {}
	for i = 1, 300 do t[i] = (i * 7919 + round) % 1009 end
	table.sort(t, function(a, b) return a > b end)
	total = total + t[1]
	local h = {}
	for i = 1, 300 do h["key" .. i] = i end
	for k, v in pairs(h) do if v % 50 == 0 then h[k] = nil end end
	-- strings and patterns
	local s = string.rep("alpha beta gamma ", 40)
	local c = select(2, s:gsub("%a+", function(w) return w:upper() end))
	for w in s:gmatch("(%a+)a ") do total = total + #w end
	total = total + c + #s:reverse():sub(3, 30) + (s:find("gamma", 1, true) or 0)
	-- closures, recursion, metatables
	total = total + fib(15)
	local acc = vec(0, 0)
	for i = 1, 200 do acc = acc + vec(i, -i) end
	total = total + #tostring(acc)
	-- errors: each pcall longjmps out of 20 nested Lua and C frames
	for i = 1, 30 do
		local ok, e = pcall(deep, 20)
		if not ok and type(e) == "table" then total = total + e.code end
		local ok2 = pcall(string.rep)
		if not ok2 then total = total + 1 end
	end
	-- coroutines
	for v in gen(100) do total = total + v % 7 end
	-- the collector
	if round % 5 == 0 then collectgarbage("collect") end
end
print("total " .. total)
-- the process's CPU time in the workload (scripts/bench_funcs.sh), apart from the result
io.stderr:write(string.format("cpu_s %.6f\n", os.clock() - t0))
