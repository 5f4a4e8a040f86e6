// SPDX-License-Identifier: MIT
/*
 * handover_shm.c - the handed buffer file's writer (layout: handover.h,
 * handover_int.h): taking or making the memfd, laying it out for this
 * recorder's buffer, saving counters and task names, marking a clean stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "handover_int.h"
#include "clocks.h"
#include "dump_stacks.h"
#include "version.h"

struct bt_handover {
	int fd;
	uint8_t *page0;  /* header and live words, mapped shared */
	uint8_t *state;  /* both state slots, mapped shared */
	uint64_t state_bytes;
	uint64_t gen;    /* the last slot saved */
	uint64_t stacks_off, stacks_gen; /* the stacks slots, the last saved */
};

static struct bt_handover *wrap(int fd)
{
	struct bt_handover *h = calloc(1, sizeof(*h));

	if (h)
		h->fd = fd;
	return h;
}

/* The recorder that wrote the file runs still: laying the file out
 * again would pull its memory from under it (SIGBUS). */
static int writer_alive(uint32_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (!pid || pid == (uint32_t)getpid() || kill((pid_t)pid, 0))
		return 0; /* gone, or ourselves before an exec */
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	if (strncmp(comm, "btrace-bpf", 10))
		return 0; /* the pid was reused */
	/* A zombie (killed, not reaped yet) writes nothing more. */
	char st[512] = "", *rp;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(st, sizeof(st), f))
			st[0] = '\0';
		fclose(f);
	}
	rp = strrchr(st, ')');
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

struct bt_handover *bt_handover_take(int fd, struct bt_ho_found *found, char *found_err, size_t found_errlen,
				     char *err, size_t errlen)
{
	struct stat st;

	memset(found, 0, sizeof(*found));
	found_err[0] = '\0';
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "handed fd %d: %s", fd, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "handed fd %d is not a memory file (memfd)", fd);
		return NULL;
	}
	/* Seals would stop the resize and writes below: not ours to use. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals > 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))) {
		snprintf(err, errlen, "handed fd %d is sealed against writing or resizing", fd);
		return NULL;
	}
	if (st.st_size > 0) {
		/* Read-only; the writer is gone and only this process resizes
		 * the file, after the copy: nothing changes while it is read. */
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED) {
			snprintf(err, errlen, "cannot map the handed buffer (%lld bytes): %s", (long long)st.st_size,
				 strerror(errno));
			return NULL;
		}
		if (bt_ho_read(m, (size_t)st.st_size, fd, found, found_err, found_errlen))
			memset(found, 0, sizeof(*found));
		munmap(m, (size_t)st.st_size);
		if (found->kbuf && found->state == BT_HO_RUNNING && writer_alive(found->pid)) {
			snprintf(err, errlen, "the handed buffer is in use by recorder %u, still running", found->pid);
			bt_ho_found_free(found);
			return NULL;
		}
		/* Its programs' counters, if it pinned them (a clean stop
		 * removes the pin: nothing was left to count). */
		if (found->kbuf && bt_ho_take_pinned(fd, found->pid, &found->tail, found->tail_err,
						     sizeof(found->tail_err)) == -ENOENT && found->state != BT_HO_RUNNING)
			found->tail_err[0] = '\0';
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC); /* an exec upgrade clears it on purpose */
	struct bt_handover *h = wrap(fd);
	if (!h) {
		bt_ho_found_free(found);
		snprintf(err, errlen, "out of memory");
	}
	return h;
}

struct bt_handover *bt_handover_new(char *err, size_t errlen)
{
	int fd = memfd_create("btrace-buffer", MFD_CLOEXEC);
	struct bt_handover *h;

	if (fd < 0) {
		snprintf(err, errlen, "memfd_create: %s", strerror(errno));
		return NULL;
	}
	h = wrap(fd);
	if (!h) {
		close(fd);
		snprintf(err, errlen, "out of memory");
	}
	return h;
}

int bt_handover_fd(const struct bt_handover *h)
{
	return h->fd;
}

static uint64_t page_up(uint64_t x)
{
	return (x + BT_HO_PAGE - 1) / BT_HO_PAGE * BT_HO_PAGE;
}

int bt_handover_prepare(struct bt_handover *h, const struct bt_config *cfg, uint32_t ncpus, struct bt_shm_place *place,
			char *err, size_t errlen)
{
	struct bt_ho_header hd = { 0 };
	size_t max_size;
	uint32_t A;
	int ret = bt_buffer_geometry(cfg, &A, NULL, &max_size, err, errlen);

	if (ret)
		return ret;
	hd.magic = BT_HO_MAGIC;
	hd.version = BT_HO_VERSION;
	hd.header_bytes = sizeof(hd);
	hd.block_size = cfg->block_size ? cfg->block_size : BT_DEFAULT_BLOCK_SIZE;
	hd.active = A;
	hd.ncores = cfg->ncores;
	hd.ncpus = ncpus;
	hd.max_size = max_size;
	hd.meta_off = BT_HO_PAGE;
	hd.meta_bytes = bt_buffer_meta_bytes(A);
	hd.state_off = page_up(hd.meta_off + hd.meta_bytes);
	hd.state_bytes = page_up(BT_HO_STATE_BYTES(BT_HO_MAX_TASKS));
	hd.data_off = hd.state_off + 2 * hd.state_bytes;
	/* the stack table's two slots after the data: sparse until saved */
	struct bt_ho_stacks_desc sd = { .magic = BT_HO_STACKS_MAGIC, .off = page_up(hd.data_off + max_size),
					.slot_bytes = BT_HO_STACKS_SLOT };
	sd.sum = bt_ho_sum(0, &sd, offsetof(struct bt_ho_stacks_desc, sum));
	hd.file_size = sd.off + 2 * sd.slot_bytes;
	hd.sum = bt_ho_sum(0, &hd, offsetof(struct bt_ho_header, sum));
	/* Old contents go: the header first (a death from here on leaves a
	 * file the next start refuses, not one it half believes), then the
	 * size (the data is zeroed by the buffer at create). */
	if (ftruncate(h->fd, 0) || ftruncate(h->fd, (off_t)hd.file_size)) {
		snprintf(err, errlen, "cannot size the buffer's memory file to %llu bytes: %s",
			 (unsigned long long)hd.file_size, strerror(errno));
		return -errno;
	}
	h->page0 = mmap(NULL, BT_HO_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
	h->state = mmap(NULL, 2 * hd.state_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, (off_t)hd.state_off);
	if (h->page0 == MAP_FAILED || h->state == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map the buffer's memory file: %s", strerror(-ret));
		if (h->page0 != MAP_FAILED)
			munmap(h->page0, BT_HO_PAGE);
		if (h->state != MAP_FAILED)
			munmap(h->state, 2 * hd.state_bytes);
		h->page0 = h->state = NULL;
		return ret;
	}
	h->state_bytes = hd.state_bytes;
	struct bt_ho_live *lv = (void *)(h->page0 + BT_HO_LIVE_OFF);
	atomic_store_explicit(&lv->pid, (uint32_t)getpid(), memory_order_relaxed);
	atomic_store_explicit(&lv->state, BT_HO_RUNNING, memory_order_relaxed);
	atomic_store_explicit(&lv->state_gen, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&lv->recorders, 1, memory_order_relaxed);
	bt_ho_exe_identity(&lv->exe_dev, &lv->exe_ino, &lv->exe_mtime_ns);
	snprintf(lv->version, sizeof(lv->version), "%s", BT_VERSION);
	memcpy(h->page0 + BT_HO_STACKS_DESC_OFF, &sd, sizeof(sd));
	h->stacks_off = sd.off;
	h->stacks_gen = 0;
	/* The header last: a reader believes nothing before it is complete
	 * (a reader runs only after this process is gone: no ordering). */
	memcpy(h->page0, &hd, sizeof(hd));
	place->fd = h->fd;
	place->meta_off = hd.meta_off;
	place->data_off = hd.data_off;
	return 0;
}

int bt_handover_save(struct bt_handover *h, const struct bt_ho_counters *c, const struct bt_task *tasks, size_t n)
{
	if (!h || !h->page0)
		return -EINVAL;
	struct bt_ho_live *lv = (void *)(h->page0 + BT_HO_LIVE_OFF);
	uint64_t gen = h->gen + 1;
	uint8_t *p = h->state + (gen % 2) * h->state_bytes;
	struct bt_ho_slot s = { .gen = gen, .cnt = *c };

	if (n > BT_HO_MAX_TASKS) {
		s.cnt.tasks_truncated = n - BT_HO_MAX_TASKS;
		n = BT_HO_MAX_TASKS;
	}
	s.ntasks = n;
	/* The slot not named by state_gen: a death mid-write leaves the
	 * named one intact, and this one fails its checksum. */
	memcpy(p + sizeof(s), tasks, n * sizeof(*tasks));
	s.sum = bt_ho_sum(bt_ho_sum(gen, &s.cnt, sizeof(s.cnt)), p + sizeof(s), n * sizeof(*tasks));
	memcpy(p, &s, sizeof(s));
	/* Release: the slot before its number; partner: the load in
	 * bt_ho_read, in a process started after this one is gone. */
	atomic_store_explicit(&lv->state_gen, gen, memory_order_release);
	h->gen = gen;
	return 0;
}

int bt_handover_save_stacks(struct bt_handover *h, const void *stacks, uint64_t len,
			    const struct bt_stack_births_arrays *b)
{
	if (!h || !h->page0 || !h->stacks_off)
		return -EINVAL;
	struct bt_ho_stacks_desc *sd = (void *)(h->page0 + BT_HO_STACKS_DESC_OFF);
	uint64_t gen = h->stacks_gen + 1;
	uint64_t ep = (uint64_t)b->nring * b->ncpus * 8;
	uint64_t need = bt_ho_stacks_bytes(len, b->n, b->nring, b->ncpus);

	if (need > BT_HO_STACKS_SLOT)
		return -E2BIG;
	uint8_t *buf = calloc(1, need);
	if (!buf)
		return -ENOMEM;
	struct bt_ho_stacks_slot sl = { .gen = gen, .saved_boot_ns = bt_boottime_ns(), .stacks_len = len,
					.nids = b->n, .ncpus = b->ncpus, .nring = b->nring };
	uint64_t o = bt_ho_stacks_ep_off(len, b->n);
	memcpy(buf + sizeof(sl), stacks, len);
	memcpy(buf + bt_ho_stacks_slot_off(len), b->slot, (size_t)b->n * 4);
	memcpy(buf + o, b->ep_ts, ep);
	memcpy(buf + o + ep, b->hi_ts, 8ull * b->ncpus);
	memcpy(buf, &sl, sizeof(sl));
	const size_t from = offsetof(struct bt_ho_stacks_slot, saved_boot_ns);
	sl.sum = bt_ho_sum(gen, buf + from, need - from);
	memcpy(buf, &sl, sizeof(sl));
	/* Into the slot not named by gen: a death mid-write leaves the named one. */
	ssize_t w = pwrite(h->fd, buf, need, (off_t)(h->stacks_off + (gen % 2) * BT_HO_STACKS_SLOT));
	int r = w == (ssize_t)need ? 0 : w < 0 ? -errno : -EIO;
	free(buf);
	if (r)
		return r;
	/* Release: the slot (written through the fd: the same pages) before
	 * its number; partner: the load in bt_ho_read, in a process started
	 * after this one is gone. */
	atomic_store_explicit(&sd->gen, gen, memory_order_release);
	h->stacks_gen = gen;
	return 0;
}

void bt_handover_mark(struct bt_handover *h, enum bt_ho_state st)
{
	if (h && h->page0)
		atomic_store_explicit(&((struct bt_ho_live *)(h->page0 + BT_HO_LIVE_OFF))->state, (uint32_t)st,
				      memory_order_relaxed);
}

void bt_handover_close(struct bt_handover *h)
{
	if (!h)
		return;
	if (h->page0)
		munmap(h->page0, BT_HO_PAGE);
	if (h->state)
		munmap(h->state, 2 * h->state_bytes);
	close(h->fd);
	free(h);
}
