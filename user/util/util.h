/* SPDX-License-Identifier: MIT */
/*
 * util.h - small helpers shared by the subcommands: strict parsing of sizes
 * and durations, escaping, files; with the error helpers (errors.h), the
 * clocks (clocks.h) and diagnostics (log.h) nearly every file needs.
 */
#ifndef BTRACE_UTIL_H
#define BTRACE_UTIL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "clocks.h"
#include "errors.h"
#include "log.h"

/*
 * Parse a size: decimal digits, then an optional binary suffix K, M, G or T
 * (any case, optionally followed by "B" or "iB": 64M = 64MB = 64MiB =
 * 67108864). Nothing else is accepted: no sign, no spaces, no fraction, no
 * hex, no zero. Returns 0 and the size in *out, -EINVAL for a malformed or
 * zero size, -ERANGE if it does not fit 64 bits. *out is untouched on error.
 */
int parse_size(const char *s, uint64_t *out);
/* MemAvailable from /proc/meminfo in bytes, 0 if unknown. */
uint64_t bt_mem_available(void);

/*
 * Parse a duration: decimal digits then a unit, ns, us, ms, s, m or h; a bare
 * number is seconds ("10s", "500ms", "2m", "10"). Same strictness as
 * parse_size (no zero). Returns 0 and nanoseconds in *out, -EINVAL or -ERANGE.
 */
int parse_duration(const char *s, uint64_t *out_ns);

/* Parse a decimal unsigned integer strictly (no sign, no spaces, no suffix);
 * 0 allowed. Returns 0, -EINVAL or -ERANGE (above max). */
int parse_uint(const char *s, uint64_t max, uint64_t *out);

/* "64.0 MiB", "512 KiB", "12 B": human-readable size into buf. */
const char *format_size(uint64_t bytes, char *buf, unsigned len);
/* "1h", "90s", "250ms", "1.5s": a duration as a user would write it. */
const char *format_duration(uint64_t ns, char *buf, unsigned len);

/* Diagnostics (bt_err, bt_warn, bt_info, bt_die): log.h, included here
 * because nearly every file that parses also reports. */

/* write(2) all of p, retrying short writes and EINTR: 0 or -errno. */
int bt_write_full(int fd, const void *p, size_t n);

/* mkdir -p: dir and each missing parent, made with mode (the recorder's
 * 0700: traces show what every process did). Existing ones are kept as they
 * are. 0 when dir is a directory afterwards; -ENOTDIR when a file stands
 * where it or a parent should be, -ENAMETOOLONG, or mkdir(2)'s -errno. */
int bt_mkdir_p(const char *dir, mode_t mode);

/*
 * Names from the kernel or from an application (comm, function and event
 * names) are arbitrary bytes. For one-line text output: at most maxlen bytes
 * of s (stopping at a NUL), with backslash as "\\", newline, tab and
 * carriage return as "\n", "\t", "\r", every other control character
 * (C0, DEL, C1) and every byte that does not start a valid UTF-8 sequence as
 * "\xNN"; valid UTF-8 stays as is. Always NUL-terminated; cut at a whole
 * escape when buf is too small (4 * maxlen + 1 is always enough). Returns buf.
 */
const char *bt_escape_text(const char *s, size_t maxlen, char *buf, size_t len);
/* The buffer bt_escape_text needs for a name of n bytes. */
#define BT_ESCAPED_LEN(n) (4 * (n) + 1)

/* FNV-1a of a NUL-terminated string, from seed (0 for none): the hash of
 * the tool's string-keyed tables. */
uint64_t bt_str_hash(const char *s, uint64_t seed);

/* qsort's comparison of two uint64_t, ascending. */
int bt_cmp_u64(const void *a, const void *b);

/* The calling thread at nice `nice` (below 0 needs CAP_SYS_NICE); on
 * failure "WHAT keeps normal priority: why" is logged (info), no more. */
void bt_thread_nice(int nice, const char *what);
/* The calling thread at the lowest real-time priority (SCHED_FIFO 1):
 * for threads that sleep almost always and must run as soon as woken
 * under any load (a trigger's hit on its way to its copy). Refused
 * (logged, info), the thread takes FALLBACK_NICE instead. */
void bt_thread_realtime(const char *what, int fallback_nice);
#endif
