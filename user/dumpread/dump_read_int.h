/* SPDX-License-Identifier: MIT */
/*
 * dump_read_int.h - what the dump reader's files share (private to
 * user/dump/dump_read.c, dump_open.c, dump_sections.c, dump_funcs_decode.c):
 * the reader's dump object and its error helper. dump_open.c reads and
 * checks the file (header, body, compression, CRCs); dump_sections.c parses
 * and checks the body's sections; dump_funcs_decode.c turns function batches
 * into entry/exit events; dump_read.c closes a dump and hands out its parts.
 */
#ifndef BTRACE_DUMP_READ_INT_H
#define BTRACE_DUMP_READ_INT_H
#include <stddef.h>
#include <stdint.h>
#include "dump.h"
#include "dump_format.h"
#include "dump_stacks.h"

struct bt_dump;
struct bt_dump_stream;
struct btd_header;
struct bt_event_hdr;
struct btd_app_stream_ops {
	int (*note)(void *d, const struct bt_event_hdr *ev, uint32_t len, int32_t app, uint32_t core);
	int (*block_done)(struct bt_dump *d);
	int (*stream_file)(int fd, const struct btd_header *h, struct bt_dump_stream *st, char *err, size_t errlen);
};
/* What dump_open.c gives a dump opened with BT_DUMP_OPEN_APP_STREAM. */
extern const struct btd_app_stream_ops btd_app_stream_ops;

struct bt_dump {
	struct bt_dump_header hdr;
	uint64_t body_max; /* what the reader takes into memory (dump_open.c): the body, and a packed stack table's decoded form */
	uint8_t *body; /* uncompressed body (owned) */
	uint64_t body_len;
	struct bt_task *tasks;
	size_t ntasks;
	struct bt_probe_desc *probes;
	size_t nprobes;
	uint64_t *rb_drops, *rb_emitted;
	struct bt_stats bst;
	struct bt_dump_cold cold; /* size 0: no cold tier */
	struct bt_dump_handed handed;
	int is_handed;
	struct bt_dump_restart restart; /* reason NULL: the dump holds no previous recorder's blocks */
	struct bt_read_stats rst;
	struct bt_dump_block *blocks;
	size_t nblocks, cap_blocks;
	struct bt_dump_event *events;
	size_t nevents, cap_events;
	uint64_t nentries; /* entries stored, unknown types included */
	uint64_t hdr_nsections;
	uint64_t unknown;
	struct bt_prog_miss *prog_misses; /* PMIS table */
	size_t nprog_misses;
	int seen_prog_misses;
	struct bt_dump_app *apps; /* APPS table; names point into app_names */
	size_t napps;
	char (*app_names)[BTD_APP_NAME_LEN];
	uint64_t app_blocks;
	int seen_app_blocks;
	struct bt_func_name *funcs;  /* AFUN sections, per app a sorted run */
	size_t nfuncs;
	uint8_t *func_events;        /* decoded function entries/exits (struct func_ev) */
	struct bt_dump_trigger *triggers; /* TRIG section, NULL if none */
	size_t ntriggers;
	struct bt_trigger_fired *fired;
	size_t nfired;
	struct bt_dump_stacks stacks; /* STKP section (STCK from earlier recorders) */
	int seen_stacks;
	int seen_srclocs; /* SLOC sections */
	int seen_stackwhy; /* STKW sections */
	/* a summary (dump.h): events counted here, never kept */
	int summary; /* 1: counted; 2: and the seq analysis done (bt_dump_summary_finish) */
	struct bt_dump_summary sum;
	struct bt_seq_rec *seqrecs; /* kernel events' seqs, for sum.w */
	size_t nseqrecs, cap_seqrecs;
	/* BT_DUMP_OPEN_APP_STREAM (dump_app_stream.c): application blocks
	 * checked and described, not kept; read again from fd when walked */
	int app_stream;
	/* Set by the opener (dump_open.c), so the parser and the walker call
	 * each other's files only through it (no call cycle among them): the
	 * parse's sink for ABLK events and the end of each ABLK
	 * (dump_app_stream.c), and the walks' body reader (btd_stream_file). */
	const struct btd_app_stream_ops *app_ops;
	int fd;                 /* the file, for the walks (-1: none) */
	size_t body_map;        /* d->body is an mmap of this many bytes (0: malloc) */
	uint64_t *ablk_min;     /* per ABLK in body order: its earliest event time */
	size_t nablk, cap_ablk;
	uint64_t app_first, app_last; /* over every application record (batches' records too) */
	uint64_t app_events;    /* application events, function records counted one each */
	uint64_t ablk_cur;      /* the ABLK being read: its earliest event time so far */
	int32_t app_max;        /* the highest application index an ABLK named (-1) */
	uint32_t *app_tgid;     /* [cap_app_tgid] per application index: its ABLK events' process (0: none) */
	size_t cap_app_tgid;
	int32_t tgid_mixed;     /* an application whose ABLK events name two processes (-1: none) */
	uint32_t tgid_other;    /* the second of them */
	struct btd_header fhdr; /* the file's header, for the walks */
};

/* A decoded function entry or exit: an application event (events.h). */
struct btd_func_ev {
	struct bt_event_hdr h; /* struct bt_ev_app with one argument */
	uint32_t name_id;
	uint16_t nargs, flags;
	int64_t addr;
};
/* The name id of the function at addr in app's sorted table (0: none). */
uint32_t btd_func_name_id(const struct bt_dump_app *app, uint64_t addr);

/* An application event a parse hands over instead of keeping (a dump
 * opened with BT_DUMP_OPEN_APP_STREAM); 0 or -errno. */
typedef int (*btd_app_sink)(void *ctx, const struct bt_event_hdr *ev, uint32_t len, int32_t app, uint32_t core);
/* The payload of an ABLK section at body offset off checked, each of its
 * events handed to sink (d is changed only in its counters): 0 or -errno
 * with a message in err. */
int btd_app_block_each(struct bt_dump *d, uint8_t *pl, uint64_t len, uint64_t off, btd_app_sink sink, void *ctx,
		       char *err, size_t errlen);
/* dump_app_stream.c: an ABLK event of the first read described (sink for
 * btd_parse_section when d->app_stream). */
int btd_app_stream_note(void *d, const struct bt_event_hdr *ev, uint32_t len, int32_t app, uint32_t core);
/* A section of an ABLK ends: its description recorded. */
int btd_app_stream_block_done(struct bt_dump *d);

/* dump_stream.c: a stream that keeps each section's payload at its body
 * offset in d->body (d->body_len bytes), but an ABLK's in a scratch buffer
 * it reuses: d->app_stream's first read. */
struct bt_dump_stream *btd_stream_keep(struct bt_dump *d);
/* A stream that hands each ABLK payload (and its body offset) to fn and
 * skips every other section: the walks. Freed by btd_stream_ablk_end, 0 or
 * -errno with the message in err. */
typedef int (*btd_ablk_fn)(void *ctx, uint8_t *pl, uint64_t len, uint64_t off);
struct bt_dump_stream *btd_stream_ablk(btd_ablk_fn fn, void *ctx);
int btd_stream_ablk_end(struct bt_dump_stream *s, char *err, size_t errlen);
/* dump_open.c: the body of the file at fd (header h) through stream st,
 * inflated a chunk at a time, both checksums checked: 0 or -errno. */
int btd_stream_file(int fd, const struct btd_header *h, struct bt_dump_stream *st, char *err, size_t errlen);

/* dump_sections.c, section by section (btd_parse_body, and the stream of
 * dump_stream.c): what has been seen so far. */
struct btd_parser {
	struct bt_dump *d;
	char *err;
	size_t errlen;
	uint64_t off, nsec; /* body offset of the next section; sections parsed */
	int seen_tasks, seen_probes, seen_loss, seen_end;
};
void btd_parser_init(struct btd_parser *ps, struct bt_dump *d, char *err, size_t errlen);
/* One section (its header s, payload pl of s->len bytes, padded) checked
 * and taken into the dump; 0 or -errno with a message. */
int btd_parse_section(struct btd_parser *ps, const struct btd_section *s, uint8_t *pl);
/* After the last section: what the whole body must satisfy. */
int btd_parse_done(struct btd_parser *ps);
/* A summary does not read sections of this type (stacks, function names). */
int btd_summary_skips(uint32_t type);
/* An event of a summary counted (app: its application, -1
 * kernel); 0 or -ENOMEM. */
int btd_summary_event(struct bt_dump *d, const struct bt_event_hdr *ev, uint32_t len, int32_t app);
/* After the body: the seq analysis of the kernel events kept. */
int btd_summary_done(struct bt_dump *d);
/* The header fields a reader keeps, from the file's header. */
void btd_header_copy(struct bt_dump *d, const struct btd_header *h, uint64_t file_len);

/* Puts the message in err, sets errno to e; NULL (for return). */
__attribute__((format(printf, 4, 5))) void *btd_rerr(char *err, size_t errlen, int e, const char *fmt, ...);

static inline void btd_nul_terminate(char *s, size_t len)
{
	s[len - 1] = '\0';
}

/* dump_sections.c: every section of d->body, checked, into d (events unsorted). */
int btd_parse_body(struct bt_dump *d, char *err, size_t errlen);
/* dump_funcs_decode.c: each function batch replaced by its entries and exits. */
int btd_decode_funcs(struct bt_dump *d, char *err, size_t errlen);
/* The applications' function name tables pointed at (btd_decode_funcs does it too). */
void btd_link_funcs(struct bt_dump *d);
#endif
