/* SPDX-License-Identifier: MIT */
/*
 * btrace.h - in-process application tracing into the btrace-bpf flight
 * recorder. Link with -lbtrace -lpthread (build/libbtrace.a).
 *
 *   BTRACE_INSTANT("frame_drop", n);        an instant event, up to 4 integer args
 *   BTRACE_BEGIN("render");                 a slice on the calling thread ...
 *   BTRACE_END();                           ... ended (slices nest)
 *   BTRACE_COUNTER("queue_len", len);       a counter value
 *   BTRACE_TRIGGER("stall");                ask the recorder for a dump: fires its
 *                                           `record --trigger app:stall` (and shows
 *                                           in the trace as an instant event)
 *
 * Names must be string literals or otherwise live forever; each call site
 * interns its name once (a name becomes a small id; events carry the id).
 *
 * At start-up (or btrace_init()) the library looks for a running
 * `btrace-bpf record` through its control socket ($BTRACE_CTL, else
 * /run/btrace-bpf/NNN.sock) and retries in the background every
 * $BTRACE_RETRY_MS (default 1000) until one runs. The recorder hands the
 * process a shared-memory block buffer; events go straight into it: no lock
 * and no system call per event, any number of threads, preempted anywhere.
 * Without a recorder an event costs one predicted branch. Timestamps are
 * CLOCK_BOOTTIME, the clock of the kernel events, so both share one timeline.
 * BTRACE_DISABLE=1 in the environment turns the library off.
 */
#ifndef BTRACE_H
#define BTRACE_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BTRACE_TYPE_INSTANT 21 /* = BT_EV_APP_* in bpf/events.h */
#define BTRACE_TYPE_BEGIN 22
#define BTRACE_TYPE_END 23
#define BTRACE_TYPE_COUNTER 24
#define BTRACE_MAX_ARGS 4

/* Non-zero while attached to a recorder. Read by the macros only. */
extern int btrace_on_;

/* Optional: name the process in the recorder (default: its comm) and start
 * looking for a recorder now rather than at the first event. 0 or -errno. */
int btrace_init(const char *app_name);
/* 1 if events currently go into a recorder's buffer: it has answered the
 * registration. Before that, a process started while a recorder listens
 * writes into a buffer of its own that the recorder adopts when it
 * answers (0 meanwhile). */
int btrace_attached(void);
/* Intern a name (for names built at run time); returns its id (> 0), or 0 if
 * the table is full. The string is copied. */
uint32_t btrace_intern(const char *name);
/* Write one event with an interned name id (0 for END). nargs <= 4. */
void btrace_event(unsigned type, uint32_t name_id, unsigned nargs, const int64_t *args);

/* Used by the macros. */
void btrace_emit_(unsigned type, uint32_t *id_cache, const char *name, unsigned nargs, const int64_t *args);
void btrace_trigger_(uint32_t *id_cache, const char *name);

#define BTRACE_EVENT_(type, name, ...)                                                              \
	do {                                                                                        \
		if (__builtin_expect(__atomic_load_n(&btrace_on_, __ATOMIC_RELAXED) != 0, 0)) {     \
			static uint32_t btrace_id_;                                                  \
			const int64_t btrace_a_[] = { 0, ##__VA_ARGS__ };                            \
			(void)sizeof(char[sizeof(btrace_a_) / 8 - 1 <= BTRACE_MAX_ARGS ? 1 : -1]);   \
			btrace_emit_((type), &btrace_id_, (name), sizeof(btrace_a_) / 8 - 1,         \
				     btrace_a_ + 1);                                                 \
		}                                                                                   \
	} while (0)

#define BTRACE_INSTANT(name, ...) BTRACE_EVENT_(BTRACE_TYPE_INSTANT, name, ##__VA_ARGS__)
#define BTRACE_BEGIN(name, ...) BTRACE_EVENT_(BTRACE_TYPE_BEGIN, name, ##__VA_ARGS__)
#define BTRACE_END() BTRACE_EVENT_(BTRACE_TYPE_END, (const char *)0)
#define BTRACE_COUNTER(name, value) BTRACE_EVENT_(BTRACE_TYPE_COUNTER, name, (int64_t)(value))
#define BTRACE_TRIGGER(name)                                                                        \
	do {                                                                                        \
		if (__builtin_expect(__atomic_load_n(&btrace_on_, __ATOMIC_RELAXED) != 0, 0)) {     \
			static uint32_t btrace_id_;                                                  \
			btrace_trigger_(&btrace_id_, (name));                                        \
		}                                                                                   \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif
