// SPDX-License-Identifier: MIT
/*
 * handover_read.c - reading a handed buffer file (handover.h) as untrusted
 * input: the previous recorder may have died mid-write, or the memory may
 * be anything at all. Every offset and size is checked against the file
 * before it is followed; the blocks go through bt_capture_salvage, which
 * checks each against its metadata word; the state slots have checksums.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "handover_int.h"
#include "compact.h"
#include "clocks.h"

uint64_t bt_ho_sum(uint64_t seed, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed, w;
	size_t i = 0;

	/* FNV-1a over 8-byte words: a torn write or a flipped bit changes it. */
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

void bt_ho_exe_identity(uint64_t *dev, uint64_t *ino, uint64_t *mtime_ns)
{
	struct stat st;

	if (stat("/proc/self/exe", &st)) {
		*dev = *ino = *mtime_ns = 0;
		return;
	}
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	*mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
}

static int bad(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "the handed buffer is refused: %s", what);
	return -EINVAL;
}

/* Within [0, len) and page-aligned. */
static int span_ok(uint64_t off, uint64_t n, size_t len)
{
	return off % BT_HO_PAGE == 0 && off <= len && n <= len - off;
}

static int check_header(const struct bt_ho_header *h, size_t len, char *err, size_t errlen)
{
	if (h->magic != BT_HO_MAGIC)
		return bad(err, errlen, "no btrace-bpf buffer header (magic)");
	if (h->version != BT_HO_VERSION || h->header_bytes != sizeof(*h))
		return bad(err, errlen, "written by an incompatible version");
	if (h->sum != bt_ho_sum(0, h, offsetof(struct bt_ho_header, sum)))
		return bad(err, errlen, "header checksum mismatch");
	uint32_t bs = h->block_size;
	if (bs < BT_MIN_BLOCK_SIZE || bs > BT_MAX_BLOCK_SIZE || (bs & (bs - 1)) || !h->active || h->active > 0xffff ||
	    !h->ncores || h->ncores > BT_MAX_CORES || !h->ncpus || h->ncpus > BT_MAX_CORES)
		return bad(err, errlen, "impossible geometry");
	uint64_t slot = (uint64_t)h->active * bs;
	if (!h->max_size || h->max_size % slot || h->max_size / bs > UINT32_MAX)
		return bad(err, errlen, "data size not a whole number of slots");
	if (h->meta_bytes != bt_buffer_meta_bytes(h->active))
		return bad(err, errlen, "metadata size does not match the geometry");
	if (h->state_bytes < sizeof(struct bt_ho_slot) || h->state_bytes > BT_HO_STATE_BYTES(BT_HO_MAX_TASKS) + BT_HO_PAGE)
		return bad(err, errlen, "state size out of range");
	if (h->file_size > len || !span_ok(h->meta_off, h->meta_bytes, h->file_size) ||
	    !span_ok(h->state_off, 2 * h->state_bytes, h->file_size) || !span_ok(h->data_off, h->max_size, h->file_size))
		return bad(err, errlen, "a part lies outside the file");
	if (h->meta_off < BT_HO_PAGE || h->state_off < h->meta_off + h->meta_bytes ||
	    h->data_off < h->state_off + 2 * h->state_bytes)
		return bad(err, errlen, "parts overlap");
	return 0;
}

/* The newest complete state slot; 0 if one passed, -1 if none did. */
static int read_state(const uint8_t *base, const struct bt_ho_header *h, uint64_t gen, struct bt_ho_found *f)
{
	for (int k = 0; k < 2; k++) {
		uint64_t g = gen - (uint64_t)k;
		const uint8_t *p = base + h->state_off + (g % 2) * h->state_bytes;
		struct bt_ho_slot s;

		memcpy(&s, p, sizeof(s));
		if (!g || s.gen != g || s.ntasks > (h->state_bytes - sizeof(s)) / sizeof(struct bt_task))
			continue;
		size_t tb = (size_t)s.ntasks * sizeof(struct bt_task);
		uint64_t sum = bt_ho_sum(g, &s.cnt, sizeof(s.cnt));

		sum = bt_ho_sum(sum, p + sizeof(s), tb);
		if (sum != s.sum)
			continue;
		f->tasks = malloc(tb ? tb : 1);
		if (!f->tasks)
			return -1;
		memcpy(f->tasks, p + sizeof(s), tb);
		for (size_t i = 0; i < s.ntasks; i++) /* names are shown: terminated */
			f->tasks[i].comm[BT_TASK_COMM_LEN - 1] = '\0';
		f->ntasks = s.ntasks;
		f->cnt = s.cnt;
		f->have_state = 1;
		return 0;
	}
	return -1;
}

/* The newest complete stacks slot, copied (checksum and sizes checked;
 * decoded by bt_handover_dump, as a dump's STKP is by a reader). Files
 * of recorders before it have no descriptor: no stacks. */
static void read_stacks(const uint8_t *base, size_t len, const struct bt_ho_header *h, struct bt_ho_found *f)
{
	struct bt_ho_stacks_desc sd;

	memcpy(&sd, base + BT_HO_STACKS_DESC_OFF, offsetof(struct bt_ho_stacks_desc, gen));
	if (sd.magic != BT_HO_STACKS_MAGIC || sd.sum != bt_ho_sum(0, &sd, offsetof(struct bt_ho_stacks_desc, sum)) ||
	    sd.slot_bytes != BT_HO_STACKS_SLOT || sd.off < h->data_off + h->max_size ||
	    !span_ok(sd.off, 2 * sd.slot_bytes, len))
		return;
	/* Acquire: partner of the release in bt_handover_save_stacks. */
	uint64_t gen = atomic_load_explicit((_Atomic uint64_t *)(base + BT_HO_STACKS_DESC_OFF +
								   offsetof(struct bt_ho_stacks_desc, gen)),
					    memory_order_acquire);
	for (int k = 0; k < 2; k++) {
		uint64_t g = gen - (uint64_t)k;
		const uint8_t *p = base + sd.off + (g % 2) * sd.slot_bytes;
		struct bt_ho_stacks_slot sl;

		if (!g)
			break;
		memcpy(&sl, p, sizeof(sl));
		if (sl.gen != g || sl.stacks_len > sd.slot_bytes || sl.nids > sd.slot_bytes / 4 || sl.ncpus != h->ncpus ||
		    !sl.nring || sl.nring > 4096)
			continue;
		uint64_t need = bt_ho_stacks_bytes(sl.stacks_len, sl.nids, sl.nring, sl.ncpus);
		if (need > sd.slot_bytes)
			continue;
		const size_t from = offsetof(struct bt_ho_stacks_slot, saved_boot_ns);
		if (bt_ho_sum(g, p + from, need - from) != sl.sum)
			continue;
		f->stacks = malloc(need);
		if (!f->stacks)
			return;
		memcpy(f->stacks, p, need);
		f->stacks_saved_ns = sl.saved_boot_ns;
		return;
	}
}

/* Slots of the data part with memory in file fd (SEEK_DATA): a hole was
 * never written (or released); reading it through a mapping would
 * allocate it. NULL: no fd, or the file system cannot say (all read). */
static uint8_t *present_slots(int fd, const struct bt_ho_header *h)
{
	uint64_t sb = (uint64_t)h->active * h->block_size, n = h->max_size / sb;
	uint8_t *p;
	off_t at = (off_t)h->data_off, end = (off_t)(h->data_off + h->max_size);

	if (fd < 0 || !(p = calloc(n, 1)))
		return NULL;
	while (at < end) {
		off_t d = lseek(fd, at, SEEK_DATA), e;

		if (d < 0 || d >= end)
			break;
		e = lseek(fd, d, SEEK_HOLE);
		if (e < 0) {
			free(p);
			return NULL;
		}
		if (e > end)
			e = end;
		for (uint64_t s = ((uint64_t)d - h->data_off) / sb; s < n && h->data_off + s * sb < (uint64_t)e; s++)
			p[s] = 1;
		at = e;
	}
	return p;
}

int bt_ho_read(const uint8_t *base, size_t len, int fd, struct bt_ho_found *f, char *err, size_t errlen)
{
	struct bt_ho_header h;
	const struct bt_ho_live *lv = (const void *)(base + BT_HO_LIVE_OFF);
	int ret;

	memset(f, 0, sizeof(*f));
	if (len < BT_HO_PAGE)
		return bad(err, errlen, "shorter than its header");
	memcpy(&h, base, sizeof(h));
	ret = check_header(&h, len, err, errlen);
	if (ret)
		return ret;
	/* Relaxed: the writer is gone; these are numbers to check. */
	f->pid = atomic_load_explicit((_Atomic uint32_t *)&lv->pid, memory_order_relaxed);
	f->state = (int)atomic_load_explicit((_Atomic uint32_t *)&lv->state, memory_order_relaxed);
	f->recorders = atomic_load_explicit((_Atomic uint64_t *)&lv->recorders, memory_order_relaxed);
	if (f->state != BT_HO_STOPPED && f->state != BT_HO_EXEC)
		f->state = BT_HO_RUNNING; /* anything else: it did not say it stopped */
	/* A clean stop by another binary than this one: an upgrade (or a
	 * reinstall) with its restart. Only compared, never trusted. */
	uint64_t dev, ino, mt;
	bt_ho_exe_identity(&dev, &ino, &mt);
	if (f->state == BT_HO_STOPPED && (lv->exe_dev != dev || lv->exe_ino != ino || lv->exe_mtime_ns != mt))
		f->state = BT_HO_EXEC;
	/* Acquire: partner of the release in bt_handover_save (the writer
	 * is gone by now: a formality). */
	read_state(base, &h, atomic_load_explicit((_Atomic uint64_t *)&lv->state_gen, memory_order_acquire), f);
	f->cnt.ncpus = h.ncpus; /* the checked header's, not the slot's */
	read_stacks(base, len, &h, f);
	uint8_t *present = present_slots(fd, &h);
	f->kbuf = bt_capture_salvage(base + h.meta_off, base + h.data_off, h.block_size, h.active, h.ncores,
				     (uint32_t)(h.max_size / h.block_size), present, &f->ss);
	free(present);
	if (!f->kbuf) {
		ret = -errno;
		bt_ho_found_free(f);
		snprintf(err, errlen, "cannot read the handed buffer: %s", strerror(-ret));
		return ret;
	}
	struct bt_stats st = *bt_capture_stats(f->kbuf);
	st.entries_written = f->cnt.entries_written;
	st.bytes_written = f->cnt.bytes_written;
	st.padding_bytes = f->cnt.padding_bytes;
	st.blocks_used = f->cnt.blocks_used;
	bt_capture_set_stats(f->kbuf, &st);
	bt_compact_capture_span(f->kbuf, bt_boottime_ns(), NULL, &f->newest_ts);
	return 0;
}

void bt_ho_found_free(struct bt_ho_found *f)
{
	bt_capture_free(f->kbuf);
	free(f->tasks);
	free(f->seq_base);
	free(f->stacks);
	bt_ho_tail_free(&f->tail);
	memset(f, 0, sizeof(*f));
}

const char *bt_ho_reason(const struct bt_ho_found *f)
{
	return f->state == BT_HO_STOPPED ? "restart" : f->state == BT_HO_EXEC ? "upgrade" : "recorder-died";
}
