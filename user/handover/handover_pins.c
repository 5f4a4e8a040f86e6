// SPDX-License-Identifier: MIT
/*
 * handover_pins.c - the BPF side's per-CPU counters (seq, drops, emitted)
 * outlive a recorder that dies: pinned in bpffs under a name tied to the
 * handed memfd and its writer, so the next start counts the events the
 * dead recorder's programs emitted after the newest its buffer kept (in
 * its rings, in its drain's hands). A clean stop drains everything and
 * removes the pin.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "handover.h"
#include "events.h"

#define PIN_ROOT "/sys/fs/bpf"
#define PIN_DIR PIN_ROOT "/btrace-bpf"
#define PIN_STALE_S (24 * 3600) /* a dead writer's pin nobody took: swept after a day */

static const char *pin_dir(void)
{
	const char *d = getenv("BTRACE_PIN_DIR"); /* tests: a bpffs of their own */
	return d && *d ? d : PIN_DIR;
}

static int pin_path(int memfd, uint32_t pid, char *path, size_t len)
{
	struct stat st;

	if (fstat(memfd, &st))
		return -errno;
	/* no '.' in the name: bpffs refuses it (EPERM) */
	snprintf(path, len, "%s/handover-%llu-%u-cpu_state", pin_dir(), (unsigned long long)st.st_ino, pid);
	return 0;
}

/* Pins of writers that are gone, older than PIN_STALE_S: never taken (a
 * recorder killed and not started again). Only names this file makes. */
static void sweep_stale(void)
{
	DIR *d = opendir(pin_dir());
	struct dirent *e;
	time_t now = time(NULL);

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long long ino;
		unsigned pid;
		char tail[16];
		struct stat st;

		if (sscanf(e->d_name, "handover-%llu-%u-%15s", &ino, &pid, tail) != 3 || strcmp(tail, "cpu_state"))
			continue;
		if (!kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || now - st.st_mtime < PIN_STALE_S)
			continue;
		unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

int bt_ho_pin(int memfd, int cpu_state_fd, char *err, size_t errlen)
{
	char path[256];
	struct statfs fs;
	struct stat st;
	int ret;

	if (!getenv("BTRACE_PIN_DIR") && (statfs(PIN_ROOT, &fs) || fs.f_type != BPF_FS_MAGIC)) {
		snprintf(err, errlen, "no BPF file system at " PIN_ROOT " (mount -t bpf bpf " PIN_ROOT ")");
		return -ENOENT;
	}
	if (mkdir(pin_dir(), 0700) && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errlen, "cannot create %s: %s", pin_dir(), strerror(-ret));
		return ret;
	}
	if (lstat(pin_dir(), &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is not a directory of this user", pin_dir());
		return -EPERM;
	}
	sweep_stale();
	if ((ret = pin_path(memfd, (uint32_t)getpid(), path, sizeof(path)))) {
		snprintf(err, errlen, "the buffer's memory file: %s", strerror(-ret));
		return ret;
	}
	unlink(path); /* a previous process of this pid: not this memfd's writer now */
	if (bpf_obj_pin(cpu_state_fd, path)) {
		ret = -errno;
		snprintf(err, errlen, "cannot pin the BPF counters at %s: %s", path, strerror(-ret));
		return ret;
	}
	return 0;
}

void bt_ho_unpin(int memfd)
{
	char path[256];

	if (!pin_path(memfd, (uint32_t)getpid(), path, sizeof(path)))
		unlink(path);
}

void bt_ho_tail_free(struct bt_ho_tail *t)
{
	free(t->seq_next);
	free(t->drops);
	free(t->emitted);
	memset(t, 0, sizeof(*t));
}

int bt_ho_read_counters(int fd, struct bt_ho_tail *t, char *err, size_t errlen)
{
	struct bpf_map_info info;
	uint32_t ilen = sizeof(info), key = 0;
	int ncpus = libbpf_num_possible_cpus(), ret = 0;

	memset(t, 0, sizeof(*t));
	if (ncpus <= 0 || ncpus > BT_MAX_CORES) {
		snprintf(err, errlen, "the CPU count is unknown");
		return -EINVAL;
	}
	/* Whatever was handed must be the map we hand over, or it is not read. */
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen) || info.type != BPF_MAP_TYPE_PERCPU_ARRAY ||
	    info.key_size != 4 || info.value_size != sizeof(struct bt_cpu_state) || info.max_entries != 1) {
		snprintf(err, errlen, "what was handed as its BPF counters is not the recorder's per-CPU map");
		return -EINVAL;
	}
	struct bt_cpu_state *v = calloc((size_t)ncpus, sizeof(*v));
	t->seq_next = calloc((size_t)ncpus, sizeof(*t->seq_next));
	t->drops = calloc((size_t)ncpus * BT_GROUP_MAX, sizeof(*t->drops));
	t->emitted = calloc((size_t)ncpus * BT_GROUP_MAX, sizeof(*t->emitted));
	if (!v || !t->seq_next || !t->drops || !t->emitted) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	} else if (bpf_map_lookup_elem(fd, &key, v)) {
		ret = -errno;
		snprintf(err, errlen, "cannot read its BPF counters: %s", strerror(-ret));
	} else {
		for (int c = 0; c < ncpus; c++) {
			t->seq_next[c] = v[c].seq;
			memcpy(t->drops + (size_t)c * BT_GROUP_MAX, v[c].drops, sizeof(v[c].drops));
			memcpy(t->emitted + (size_t)c * BT_GROUP_MAX, v[c].emitted, sizeof(v[c].emitted));
		}
		t->ncpus = (uint32_t)ncpus;
		t->known = 1;
	}
	free(v);
	if (ret)
		bt_ho_tail_free(t);
	return ret;
}

int bt_ho_take_pinned(int memfd, uint32_t writer_pid, struct bt_ho_tail *t, char *err, size_t errlen)
{
	char path[256];
	int fd, ret;

	memset(t, 0, sizeof(*t));
	if ((ret = pin_path(memfd, writer_pid, path, sizeof(path))))
		return ret;
	fd = bpf_obj_get(path);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, ret == -ENOENT ? "its BPF counters were not pinned" : "%s: %s", path,
			 strerror(-ret));
		return ret;
	}
	ret = bt_ho_read_counters(fd, t, err, errlen);
	close(fd);
	unlink(path); /* read once: the next writer pins its own */
	return ret;
}
