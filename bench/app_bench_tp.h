/* SPDX-License-Identifier: MIT */
/*
 * bench/app_bench_tp.h - the LTTng-UST tracepoint provider of the in-process
 * tracing benchmark (bench/app_bench.c built with -DWITH_LTTNG as
 * build/bench/app_bench_lttng; only there, so the project builds without
 * liblttng-ust-dev). One event, app_bench:stamp, with the three integer
 * arguments BTRACE_INSTANT("stamp", t, i, check) records.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER app_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./app_bench_tp.h"

#if !defined(APP_BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define APP_BENCH_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	app_bench, stamp,
	LTTNG_UST_TP_ARGS(int64_t, t, int64_t, i, int64_t, chk),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int64_t, t, t)
		lttng_ust_field_integer(int64_t, i, i)
		lttng_ust_field_integer(int64_t, chk, chk)
	)
)

#endif

#include <lttng/tracepoint-event.h>
