// SPDX-License-Identifier: MIT
/*
 * export_perfetto_packets.c - the Perfetto exporter's building blocks: a
 * TracePacket begun and flushed to the sink, debug annotations, TrackEvents,
 * and TrackDescriptors (once per thread, and the named child tracks under a
 * thread's one descriptor). Everything the other export_perfetto*.c files
 * write goes through these.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto_int.h"

/* ---- packets ----------------------------------------------------------------- */

/* The track sequence's first packet clears its interned state; every later
 * one may use it (names, categories, annotation names, callstacks). */
void pf_packet_begin(struct pf *f, struct pbw *w, uint32_t seq, uint64_t ts)
{
	pbw_begin(w, TRACE_PACKET);
	if (ts)
		pbw_uint(w, TP_TIMESTAMP, ts);
	pbw_uint(w, TP_TRUSTED_PACKET_SEQUENCE_ID, seq);
	if (seq == SEQ_TRACK) {
		pbw_uint(w, TP_SEQUENCE_FLAGS,
			 f->seq_track_started ? SEQ_NEEDS_INCREMENTAL_STATE : SEQ_INCREMENTAL_STATE_CLEARED);
		f->seq_track_started = 1;
	}
}

/* Close the packet (the outermost open message), with the interned data its
 * events introduced, and write the buffer out. */
int pf_packet_flush(struct pf *f, struct pbw *w)
{
	while (w->depth > 1)
		pbw_end(w);
	if (pbw_len(&f->idata)) {
		pbw_begin(w, TP_INTERNED_DATA);
		pbw_raw(w, pbw_data(&f->idata), pbw_len(&f->idata));
		pbw_end(w);
		pbw_reset(&f->idata);
	}
	while (w->depth)
		pbw_end(w);
	if (pbw_error(w) || pbw_error(&f->idata)) {
		snprintf(f->err, f->errlen, "out of memory encoding the trace");
		return pbw_error(w) ? pbw_error(w) : pbw_error(&f->idata);
	}
	if (pbw_len(w) > f->st->max_pending)
		f->st->max_pending = pbw_len(w);
	int r = bt_sink_write(f->out, pbw_data(w), pbw_len(w));
	f->st->records++;
	pbw_reset(w);
	if (r < 0)
		snprintf(f->err, f->errlen, "write error: %s", strerror(-r));
	return r;
}

/* ---- interning ------------------------------------------------------------------ */

/* InternedData fields of each kind; each kind has its own iids */
static const uint32_t intern_field[PF_NINTERN] = { ID_EVENT_CATEGORIES, ID_EVENT_NAMES, ID_DEBUG_ANNOTATION_NAMES };

/* The iid of str among kind's, added to the packet's interned data if new
 * (0 out of memory: the packet's flush fails). */
uint64_t pf_intern(struct pf *f, int kind, const char *str)
{
	struct bt_strset *t = &f->istr[kind];
	size_t n0 = t->n;
	uint32_t off = bt_strset_add(t, str), iid;

	if (t->err) {
		f->idata.err = t->err;
		return 0;
	}
	if (t->n == n0 && bt_u32map_get(&f->iids[kind], off, &iid))
		return iid;
	iid = (uint32_t)t->n;
	if (bt_u32map_put(&f->iids[kind], off, iid) < 0) {
		f->idata.err = -ENOMEM;
		return 0;
	}
	pbw_begin(&f->idata, intern_field[kind]);
	pbw_uint(&f->idata, IN_IID, iid);
	pbw_utf8(&f->idata, IN_NAME, str, SIZE_MAX);
	pbw_end(&f->idata);
	return iid;
}

void pf_intern_free(struct pf *f)
{
	for (int k = 0; k < PF_NINTERN; k++) {
		bt_strset_release(&f->istr[k], 0);
		bt_u32map_free(&f->iids[k]);
	}
	pbw_free(&f->idata);
}

/* ---- debug annotations --------------------------------------------------------- */

static void ann_begin(struct pf *f, const char *name)
{
	pbw_begin(&f->pkt, TE_DEBUG_ANNOTATIONS);
	pbw_uint(&f->pkt, DA_NAME_IID, pf_intern(f, PF_IANN, name));
}

void pf_ann_uint(void *pf, const char *name, uint64_t v)
{
	struct pf *f = pf;
	ann_begin(f, name);
	pbw_uint(&f->pkt, DA_UINT_VALUE, v);
	pbw_end(&f->pkt);
}

void pf_ann_int(void *pf, const char *name, int64_t v)
{
	struct pf *f = pf;
	ann_begin(f, name);
	pbw_int(&f->pkt, DA_INT_VALUE, v);
	pbw_end(&f->pkt);
}

void pf_ann_ptr(void *pf, const char *name, uint64_t v)
{
	struct pf *f = pf;
	ann_begin(f, name);
	pbw_uint(&f->pkt, DA_POINTER_VALUE, v);
	pbw_end(&f->pkt);
}

void pf_ann_str(void *pf, const char *name, const char *v)
{
	struct pf *f = pf;
	ann_begin(f, name);
	pbw_utf8(&f->pkt, DA_STRING_VALUE, v, SIZE_MAX);
	pbw_end(&f->pkt);
}

void pf_ann_bool(void *pf, const char *name, int v)
{
	struct pf *f = pf;
	ann_begin(f, name);
	pbw_bool(&f->pkt, DA_BOOL_VALUE, v);
	pbw_end(&f->pkt);
}

/* ---- track events ------------------------------------------------------------------ */

void pf_te_begin(struct pf *f, uint64_t ts, uint64_t uuid, int type, const char *name, const char *cat)
{
	struct pbw *w = &f->pkt;
	pf_packet_begin(f, w, SEQ_TRACK, ts);
	pbw_begin(w, TP_TRACK_EVENT);
	pbw_uint(w, TE_TYPE, (uint64_t)type);
	pbw_uint(w, TE_TRACK_UUID, uuid);
	if (cat)
		pbw_uint(w, TE_CATEGORY_IIDS, pf_intern(f, PF_ICAT, cat));
	if (name)
		pbw_uint(w, TE_NAME_IID, pf_intern(f, PF_INAME, name));
}

int pf_track_descriptor(struct pf *f, uint64_t uuid, uint64_t parent, const char *name)
{
	struct pbw *w = &f->pkt;
	pf_packet_begin(f, w, SEQ_TRACK, f->p->first_ts);
	pbw_begin(w, TP_TRACK_DESCRIPTOR);
	pbw_uint(w, TD_UUID, uuid);
	if (parent)
		pbw_uint(w, TD_PARENT_UUID, parent);
	pbw_utf8(w, TD_NAME, name, SIZE_MAX);
	return pf_packet_flush(f, w);
}

/* Once per tid: a track with the thread's ThreadDescriptor. The importer
 * takes a second thread descriptor for a tid (another uuid) as tid reuse and
 * splits the thread in two, so the thread's uprobe and application events go
 * on named child tracks of this one (pf_child_track). No events go on it: it
 * resolves to the thread's own track, where the syscall slices are. */
static int thread_track(struct pf *f, uint32_t tid, uint32_t tgid)
{
	if (bt_u32map_get(&f->thread_tracks, tid, NULL))
		return 0;
	if (bt_u32map_put(&f->thread_tracks, tid, 1) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	const struct bt_xthread *t = bt_export_thread(f->p, tid);
	struct pbw *w = &f->pkt;
	pf_packet_begin(f, w, SEQ_TRACK, f->p->first_ts);
	pbw_begin(w, TP_TRACK_DESCRIPTOR);
	pbw_uint(w, TD_UUID, UUID_THREAD(tid));
	pbw_begin(w, TD_THREAD);
	pbw_int(w, THD_PID, (int32_t)(tgid ? tgid : t && t->tgid ? t->tgid : tid));
	pbw_int(w, THD_TID, (int64_t)tid);
	if (t)
		pbw_utf8(w, THD_THREAD_NAME, t->name, BT_TASK_COMM_LEN);
	pbw_end(w);
	return pf_packet_flush(f, w);
}

/* A named child track of the thread, described once (m: the threads that
 * have it); the thread's own descriptor too, once, whoever asks first. */
int pf_named_child_track(struct pf *f, struct bt_u32map *m, uint64_t uuid, uint32_t tid, uint32_t tgid,
			 const char *name)
{
	if (bt_u32map_get(m, tid, NULL))
		return 0;
	int r = thread_track(f, tid, tgid);
	if (r < 0)
		return r;
	if (bt_u32map_put(m, tid, 1) < 0) {
		snprintf(f->err, f->errlen, "out of memory");
		return -ENOMEM;
	}
	return pf_track_descriptor(f, uuid, UUID_THREAD(tid), name);
}

/* A track of its own under the thread for its uprobe slices, (app) its
 * application events, or its traced functions: apart from the syscall
 * slices and from each other, a call whose entry or return was lost can
 * never break the others' nesting. */
int pf_child_track(struct pf *f, uint32_t tid, uint32_t tgid, int kind)
{
	static const char *const names[] = { "uprobes", "app events", "functions" };
	struct bt_u32map *m = kind == TRACK_APP ? &f->app_tracks : kind == TRACK_FUNCS ? &f->func_tracks : &f->uprobe_tracks;
	uint64_t uuid = kind == TRACK_APP ? UUID_APP_THREAD(tid) : kind == TRACK_FUNCS ? UUID_FUNCS(tid) : UUID_UPROBES(tid);

	return pf_named_child_track(f, m, uuid, tid, tgid, names[kind]);
}
