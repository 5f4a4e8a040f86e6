// jit_hot.js - a node program whose time is in one JIT-compiled function,
// hot(), for tests/kernel/test_jit_frames.sh: run with --perf-basic-prof,
// its samples must name hot from /tmp/perf-PID.map. Each call runs ~20 ms,
// so the caller loop stays cold (not optimized, hot() not inlined into it).
'use strict';
function hot(n) {
	let s = 0;
	for (let i = 0; i < n; i++)
		s = (s * 31 + i) % 1000003;
	return s;
}
const end = Date.now() + Number(process.argv[2] || 3000);
let acc = 0;
while (Date.now() < end)
	acc += hot(2000000);
console.log(acc);
