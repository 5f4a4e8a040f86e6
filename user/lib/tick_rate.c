// SPDX-License-Identifier: MIT
/*
 * tick_rate.c - the tick counter's rate, window by window (see tick_rate.h).
 */
#include "tick_rate.h"

#define AGREE_PPM 1000u /* NTP slews by at most 500 ppm; a suspend of 1 ms in a 1 s window is 1000 */

static uint64_t rate_of(uint64_t dtk, uint64_t dns)
{
	return (uint64_t)(((unsigned __int128)dns << 32) / dtk);
}

static int agree(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;
	return (unsigned __int128)d * 1000000u <= (unsigned __int128)b * AGREE_PPM;
}

void bt_tick_rate_init(struct bt_tick_rate *r, uint64_t tk0, uint64_t ns0, uint64_t tk1, uint64_t ns1)
{
	r->mult = tk1 > tk0 && ns1 > ns0 ? rate_of(tk1 - tk0, ns1 - ns0) : 0;
	r->tk = tk1;
	r->ns = ns1;
	r->pending = 0;
}

int bt_tick_rate_update(struct bt_tick_rate *r, uint64_t tk, uint64_t ns)
{
	if (ns >= r->ns && ns - r->ns < BT_TICK_WINDOW_NS)
		return 0;
	uint64_t tk0 = r->tk, ns0 = r->ns;
	r->tk = tk;
	r->ns = ns;
	if (ns < ns0 || tk <= tk0)
		return 0; /* a clock went back (the counter reset): measure from here */
	uint64_t m = rate_of(tk - tk0, ns - ns0);
	if (!r->mult || agree(m, r->mult) || (r->pending && agree(m, r->pending))) {
		int changed = m != r->mult;
		r->mult = m;
		r->pending = 0;
		return changed;
	}
	r->pending = m; /* a jump: believed if the next window says the same */
	return 0;
}
