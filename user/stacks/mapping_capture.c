// SPDX-License-Identifier: MIT
/*
 * mapping_capture.c - (tgid, address) -> (file, offset) at record time (see
 * mapping_capture.h).
 *
 * Files are keyed by the (device, inode) /proc/PID/maps shows, so a library
 * mapped by a thousand processes is opened once. The descriptor comes from
 * /proc/PID/map_files/START-END: it opens the very inode mapped even when the
 * path was deleted or now names another file (needs CAP_SYS_ADMIN, which the
 * recorder has as root); the path is the fallback.
 *
 * A descriptor pins its file's pages (a deleted file's disk blocks, a
 * memfd's memory) until the recorder stops, so only what a stack can need is
 * opened, and other users' files are bounded: only executable mappings enter
 * the table (frames are code addresses), a file is opened when a frame first
 * lands in it (not for every mapping of every process seen), and the files
 * not owned by root may pin at most BT_MAPCAP_PIN_MAX allocated bytes in all,
 * re-measured as they may grow; past that a file is kept by path only.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "mapping_capture.h"
#include "elf_symbols.h"
#include "trusted_file.h"
#include "clocks.h"

#define PROC_SLOTS 4096u   /* process caches (open addressing, power of two) */
#define MAX_FILES_FD 2048u /* descriptors kept at most (more files: path only) */
/* Re-measure the held files of other users at most this often. */
#define PIN_CHECK_NS 1000000000ull

struct vma {
	uint64_t start, end, pgoff;
	uint32_t file; /* map id; BT_MAP_NONE: anonymous executable memory */
};

struct proc {
	uint32_t tgid; /* 0: empty slot */
	uint32_t nvma;
	struct vma *vma;
	uint64_t read_ns; /* when the maps were last read (CLOCK_BOOTTIME) */
	uint64_t first_ns; /* when they were first read (since its exec) */
	uint64_t exit_ns; /* 0: running; else when its exit was applied */
	uint32_t same;    /* reads in a row that found the mappings unchanged */
};

/* An address outside every known mapping re-reads the maps at most this
 * often per process: frame-pointer walks through code built without them
 * yield junk addresses, and reading /proc/PID/maps for each would cost more
 * than the tracing. A library dlopen'ed since is seen within this time,
 * or within 8 times it after reads that found nothing new (below). */
#define REREAD_NS 200000000ull
/* ... doubled for each read in a row that found nothing new, up to 8x
 * (1.6 s): a process whose unwinding keeps yielding junk (a binary without
 * frame pointers, an agent's tokio threads here) cost its maps, its vDSO
 * and their parsing 5 times a second for as long as it ran, the symbol
 * loader's largest idle cost and ~10 ns of each traced call under load. */
#define REREAD_SAME_SHIFT_MAX 3u
/* An address in anonymous executable memory the maps showed (JIT code:
 * qemu, Java, V8, LuaJIT) is known to have no file: its maps are re-read
 * only this often, for the rare range a file has been mapped over since.
 * Re-reading at REREAD_NS made a JIT process cost 5 reads of its maps a
 * second (qemu: 46 in 10 s) for as long as it ran. */
#define REREAD_ANON_NS 10000000000ull
/* Maps read in a process's first YOUNG_NS (since its exec) may predate its
 * libraries (ld.so maps them in its first milliseconds): a miss in a
 * sample taken after such a read re-reads at once. A junk address then
 * costs a read per drain pass, for YOUNG_NS only. */
#define YOUNG_NS 100000000ull
/* ... and such maps are read once more after YOUNG_NS, miss or not: a
 * process whose later stacks all land in its own binary would otherwise
 * meet its libraries first at its exit, when its maps are gone. At most
 * this many wait for it (the oldest are dropped). */
#define YOUNG_MAX 256u

/* An exited process keeps its maps this long: the kernel samples it after
 * sched_process_exit (do_exit runs on, its mm gone), and those stacks
 * arrive after the exit was applied. Exited processes held at most
 * EXITED_MAX (a ring: the oldest is forgotten first). */
#define EXIT_GRACE_NS 2000000000ull
#define EXITED_MAX 256u

/* CLOCK_BOOTTIME: the events' clock, so a sample's time compares with
 * when the maps were read. */
/* Processes forked lately, child -> parent (a ring): a child's stack taken
 * before its exec is named from its parent's maps (bt_mapcap_parent). */
#define FORKS_MAX 1024u
struct fork_rec {
	uint32_t child, parent;
};

struct bt_mapcap {
	struct proc procs[PROC_SLOTS];
	struct fork_rec forks[FORKS_MAX];
	uint32_t forks_next;
	uint32_t nprocs;
	struct bt_mapfile *files;
	size_t nfiles, cap;
	uint64_t no_fd;
	size_t ntried;          /* files with BT_MAPFILE_TRIED */
	uint64_t maps_reads;    /* /proc/PID/maps read, for the cost (bt_mapcap_maps_reads) */
	unsigned max_fd, nfd;
	uint64_t pin_max;       /* BT_MAPCAP_PIN_MAX */
	uint64_t pin_check_ns;  /* when the held files were last measured */
	int *dropped;           /* descriptors turned into /dev/null (see drop_fd) */
	size_t ndropped;
	struct { uint32_t tgid; uint64_t exit_ns; } exited[EXITED_MAX]; /* ring, oldest at exited_head */
	uint32_t exited_head, nexited;
	uint32_t young[YOUNG_MAX]; /* ring of tgids whose maps were read young, oldest at young_head */
	uint32_t young_head, nyoung;
	const void *vdso;       /* the recorder's own vDSO image (see vdso_file) */
	uint64_t vdso_len;
	void *vdso_cmp;         /* a process's [vdso], read to compare */
	uint32_t vdso_id;       /* its map id; BT_MAP_NONE: none */
	int vdso_tried;
	bt_mapcap_path_fn path_fn; /* paths of files known only by (dev, ino) */
	void *path_arg;
};

struct bt_mapcap *bt_mapcap_new(void)
{
	struct bt_mapcap *m = calloc(1, sizeof(*m));
	struct rlimit rl;

	if (!m)
		return NULL;
	m->max_fd = MAX_FILES_FD;
	m->pin_max = BT_MAPCAP_PIN_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < m->max_fd)
		m->max_fd = (unsigned)(rl.rlim_cur / 2);
	return m;
}

void bt_mapcap_free(struct bt_mapcap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < PROC_SLOTS; i++)
		free(m->procs[i].vma);
	for (size_t i = 0; i < m->nfiles; i++) {
		free(m->files[i].path);
		if (m->files[i].fd >= 0)
			close(m->files[i].fd);
	}
	for (size_t i = 0; i < m->ndropped; i++)
		close(m->dropped[i]);
	free(m->dropped);
	free(m->files);
	free(m->vdso_cmp);
	free(m);
}

const struct bt_mapfile *bt_mapcap_files(const struct bt_mapcap *m, size_t *n)
{
	*n = m->nfiles;
	return m->files;
}

size_t bt_mapcap_ntried(const struct bt_mapcap *m)
{
	return m->ntried;
}

uint64_t bt_mapcap_maps_reads(const struct bt_mapcap *m)
{
	return m->maps_reads;
}

uint64_t bt_mapcap_no_fd(const struct bt_mapcap *m)
{
	return m->no_fd;
}


/* Bytes f's descriptor keeps alive if it is another user's file; 0 if it
 * is root's (the system's own files are not a user's to inflate). */
static uint64_t pinned_bytes(int fd)
{
	struct stat st;

	if (fstat(fd, &st) || st.st_uid == 0)
		return 0;
	return (uint64_t)st.st_blocks * 512u;
}

/* Give up f's descriptor. The dump thread may hold its number (it reads
 * files[].fd under the lock, uses it after): turning it into /dev/null
 * keeps that number from naming another file; it then reads as no ELF
 * (the path is tried) and is closed with the table. */
static void drop_fd(struct bt_mapcap *m, struct bt_mapfile *f)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	void *p = realloc(m->dropped, (m->ndropped + 1) * sizeof(*m->dropped));

	if (p)
		m->dropped = p;
	if (null < 0 || !p || dup3(null, f->fd, O_CLOEXEC) < 0) {
		/* Cannot park the number: keep the file rather than race. */
		if (null >= 0)
			close(null);
		return;
	}
	close(null);
	m->dropped[m->ndropped++] = f->fd;
	f->fd = -1;
	f->pinned = 0;
	m->nfd--;
	m->no_fd++;
}

/* Measure the held files of other users again (a memfd or a file grows
 * after it was opened); drop the newest while they pin more than allowed. */
static void check_pins(struct bt_mapcap *m, uint64_t now)
{
	uint64_t total = 0;

	if (now - m->pin_check_ns < PIN_CHECK_NS && m->pin_check_ns)
		return;
	m->pin_check_ns = now;
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].fd >= 0)
			total += m->files[i].pinned = pinned_bytes(m->files[i].fd);
	for (size_t i = m->nfiles; i-- > 0 && total > m->pin_max;)
		if (m->files[i].fd >= 0 && m->files[i].pinned) {
			total -= m->files[i].pinned;
			drop_fd(m, &m->files[i]);
		}
}

/* The first frame in f (mapped at range in tgid): open it, by the mapping
 * itself, else by path; kept if it is the right inode and within the
 * bounds, with its build-id. */
/* Open f on its first frame: through v's mapping in tgid if given, else
 * (or if that fails) by its path, checked to be the same inode. */
static void open_file(struct bt_mapcap *m, struct bt_mapfile *f, uint32_t tgid, const struct vma *v)
{
	char mf[96];
	struct stat st;

	f->flags |= BT_MAPFILE_TRIED;
	m->ntried++;
	if (m->nfd < m->max_fd) {
		if (v) {
			snprintf(mf, sizeof(mf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, tgid, v->start, v->end);
			f->fd = open(mf, O_RDONLY | O_CLOEXEC);
		} else {
			f->fd = -1; /* no mapping known: the path only */
		}
		if (f->fd < 0 && !(f->flags & BT_MAPFILE_DELETED))
			f->fd = bt_open_regular(f->path); /* no CAP_SYS_ADMIN; a FIFO put there must not block us */
	}
	/* The path may name another file by now: keep only the right inode. */
	if (f->fd >= 0 && (fstat(f->fd, &st) || (uint64_t)st.st_ino != f->ino)) {
		close(f->fd);
		f->fd = -1;
	}
	if (f->fd < 0) {
		m->no_fd++;
		return;
	}
	m->nfd++;
	f->pinned = pinned_bytes(f->fd);
	if (f->pinned) {
		uint64_t total = 0;
		for (size_t i = 0; i < m->nfiles; i++)
			if (m->files[i].fd >= 0)
				total += m->files[i].pinned;
		if (total > m->pin_max) {
			close(f->fd); /* never handed out yet: a plain close */
			f->fd = -1;
			f->pinned = 0;
			m->nfd--;
			m->no_fd++;
			return;
		}
	}
	f->build_id_len = bt_elf_build_id(f->fd, f->build_id, BT_BUILD_ID_MAX);
}

/* The map id of the file (dev, ino) a maps line shows; added if new (not
 * opened yet: see open_file). */
static uint32_t file_id(struct bt_mapcap *m, uint64_t dev, uint64_t ino, const char *path)
{
	struct bt_mapfile *f;
	size_t plen;

	for (size_t i = m->nfiles; i-- > 0;)
		if (m->files[i].dev == dev && m->files[i].ino == ino)
			return (uint32_t)i + 1;
	if (m->nfiles == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		void *p = realloc(m->files, cap * sizeof(*m->files));
		if (!p)
			return BT_MAP_NONE;
		m->files = p;
		m->cap = cap;
	}
	f = &m->files[m->nfiles];
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->ino = ino;
	f->fd = -1;
	plen = strlen(path);
	if (plen > 10 && strcmp(path + plen - 10, " (deleted)") == 0) {
		plen -= 10;
		f->flags |= BT_MAPFILE_DELETED;
	}
	f->path = strndup(path, plen);
	if (!f->path)
		return BT_MAP_NONE;
	return (uint32_t)++m->nfiles;
}

static struct proc *proc_slot(struct bt_mapcap *m, uint32_t tgid, int create)
{
	uint32_t i = (tgid * 2654435761u) & (PROC_SLOTS - 1);

	for (uint32_t k = 0; k < PROC_SLOTS; k++, i = (i + 1) & (PROC_SLOTS - 1)) {
		if (m->procs[i].tgid == tgid)
			return &m->procs[i];
		if (!m->procs[i].tgid)
			break;
	}
	if (!create)
		return NULL;
	if (m->nprocs >= PROC_SLOTS * 3 / 4) {
		/* Full: start over (processes that are gone free their slots at
		 * exit; this is a backstop). */
		for (size_t k = 0; k < PROC_SLOTS; k++) {
			free(m->procs[k].vma);
			m->procs[k] = (struct proc){ 0 };
		}
		m->nprocs = 0;
		i = (tgid * 2654435761u) & (PROC_SLOTS - 1);
	}
	while (m->procs[i].tgid)
		i = (i + 1) & (PROC_SLOTS - 1);
	m->procs[i].tgid = tgid;
	m->nprocs++;
	return &m->procs[i];
}

/* The vDSO: the kernel maps one image into every native process, the same
 * one it maps here. Its frames are named from a copy in a memfd, kept as
 * the file "[vdso]" (perf reads it from the process the same way). Made on
 * first need; BT_MAP_NONE if this process has none. */
static uint32_t vdso_file(struct bt_mapcap *m)
{
	char line[256];
	FILE *f;
	int fd;

	if (m->vdso_tried)
		return m->vdso_id;
	m->vdso_tried = 1;
	m->vdso_id = BT_MAP_NONE;
	m->vdso = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!m->vdso || !(f = fopen("/proc/self/maps", "re")))
		return BT_MAP_NONE;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		if (strstr(line, " [vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		    start == (uintptr_t)m->vdso && end - start <= (1u << 20))
			m->vdso_len = end - start;
	}
	fclose(f);
	if (!m->vdso_len || m->nfd >= m->max_fd || (fd = memfd_create("btrace-vdso", MFD_CLOEXEC)) < 0)
		return BT_MAP_NONE;
	if (write(fd, m->vdso, m->vdso_len) != (ssize_t)m->vdso_len) {
		close(fd);
		return BT_MAP_NONE;
	}
	uint32_t id = file_id(m, 0, 0, "[vdso]");
	if (id == BT_MAP_NONE) {
		close(fd);
		return BT_MAP_NONE;
	}
	struct bt_mapfile *x = &m->files[id - 1];
	x->fd = fd;
	x->flags |= BT_MAPFILE_TRIED;
	m->ntried++;
	x->build_id_len = bt_elf_build_id(fd, x->build_id, BT_BUILD_ID_MAX);
	m->nfd++;
	return m->vdso_id = id;
}

/* Whether tgid's [vdso] at start..end is the recorder's image (a 32-bit
 * process has another): compared whole, a few pages. */
static int is_own_vdso(struct bt_mapcap *m, uint32_t tgid, uint64_t start, uint64_t end)
{
	struct iovec local, remote = { (void *)(uintptr_t)start, 0 };

	if (vdso_file(m) == BT_MAP_NONE || end - start != m->vdso_len)
		return 0;
	if (!m->vdso_cmp && !(m->vdso_cmp = malloc(m->vdso_len)))
		return 0;
	local = (struct iovec){ m->vdso_cmp, m->vdso_len };
	remote.iov_len = m->vdso_len;
	return process_vm_readv((pid_t)tgid, &local, 1, &remote, 1, 0) == (ssize_t)m->vdso_len &&
	       memcmp(m->vdso_cmp, m->vdso, m->vdso_len) == 0;
}

static bool same_vmas(const struct vma *a, const struct vma *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].pgoff != b[i].pgoff || a[i].file != b[i].file)
			return false;
	return true;
}

/* (Re)read /proc/tgid/maps: the file-backed mappings. A read that finds
 * none (the process gone, or a zombie) keeps what was known: the stacks
 * it took while it ended still name those. */
static void read_maps(struct bt_mapcap *m, struct proc *p)
{
	char path[64], line[4352];
	struct vma *old = p->vma;
	uint32_t nold = p->nvma;
	FILE *f;
	size_t cap = 0;

	p->vma = NULL;
	p->nvma = 0;
	p->read_ns = bt_boottime_ns();
	if (!p->first_ns)
		p->first_ns = p->read_ns;
	if (p->read_ns - p->first_ns < YOUNG_NS) { /* read again once grown up (bt_mapcap_tick) */
		if (m->nyoung == YOUNG_MAX) {
			m->young_head = (m->young_head + 1) % YOUNG_MAX;
			m->nyoung--;
		}
		m->young[(m->young_head + m->nyoung++) % YOUNG_MAX] = p->tgid;
	}
	m->maps_reads++;
	snprintf(path, sizeof(path), "/proc/%u/maps", p->tgid);
	f = fopen(path, "re");
	if (!f)
		goto keep;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min, &ino,
			   &pos) < 7 || !pos)
			continue;
		char *name = line + pos;
		name[strcspn(name, "\n")] = '\0';
		if (perms[2] != 'x')
			continue; /* frames are code: a data mapping is never named */
		uint32_t id;
		if (!ino && strcmp(name, "[vdso]") == 0 && is_own_vdso(m, p->tgid, start, end))
			id = vdso_file(m), pgoff = 0;
		else if (ino && name[0] == '/')
			id = file_id(m, ((uint64_t)maj << 20) | min, ino, name);
		else if (!ino)
			id = BT_MAP_NONE; /* known, and known to have no file (JIT code) */
		else
			continue;
		if (id == BT_MAP_NONE && ino)
			continue; /* a file the table could not take */
		if (p->nvma == cap) {
			size_t nc = cap ? cap * 2 : 32;
			void *n = realloc(p->vma, nc * sizeof(*p->vma));
			if (!n)
				break;
			p->vma = n;
			cap = nc;
		}
		p->vma[p->nvma++] = (struct vma){ start, end, pgoff, id };
	}
	fclose(f);
keep:
	if (!p->nvma && nold) {
		free(p->vma);
		p->vma = old;
		p->nvma = nold;
		return;
	}
	if (nold && p->nvma == nold && same_vmas(p->vma, old, nold))
		p->same += p->same < REREAD_SAME_SHIFT_MAX;
	else
		p->same = 0;
	free(old);
}

void bt_mapcap_tick(struct bt_mapcap *m)
{
	uint64_t now = bt_boottime_ns();

	while (m->nyoung) {
		struct proc *p = proc_slot(m, m->young[m->young_head], 0);
		if (p && p->read_ns && now - p->first_ns < YOUNG_NS)
			break; /* the oldest is still young: so are the others */
		m->young_head = (m->young_head + 1) % YOUNG_MAX;
		m->nyoung--;
		/* still known, running, last read while young: once more */
		if (p && p->read_ns && !p->exit_ns && p->read_ns - p->first_ns < YOUNG_NS)
			read_maps(m, p);
	}
}

static const struct vma *find_vma(const struct proc *p, uint64_t addr)
{
	for (uint32_t i = 0; i < p->nvma; i++)
		if (addr >= p->vma[i].start && addr < p->vma[i].end)
			return &p->vma[i];
	return NULL;
}

static void forget_proc(struct proc *p)
{
	free(p->vma);
	p->vma = NULL;
	p->nvma = 0; /* the slot stays (probing chains), re-read on next use */
	p->read_ns = 0;
	p->first_ns = 0;
	p->exit_ns = 0;
	p->same = 0;
}

/* Forget the oldest exited process held, unless its process was forgotten
 * or seen exiting again since (its stamp differs). */
static void pop_exited(struct bt_mapcap *m)
{
	uint32_t i = m->exited_head;
	struct proc *p = proc_slot(m, m->exited[i].tgid, 0);

	if (p && p->exit_ns == m->exited[i].exit_ns)
		forget_proc(p);
	m->exited_head = (i + 1) % EXITED_MAX;
	m->nexited--;
}

static void expire_exited(struct bt_mapcap *m, uint64_t now)
{
	while (m->nexited && now - m->exited[m->exited_head].exit_ns >= EXIT_GRACE_NS)
		pop_exited(m);
}

uint32_t bt_mapcap_resolve(struct bt_mapcap *m, uint32_t tgid, uint64_t addr, uint64_t *off)
{
	return bt_mapcap_resolve_at(m, tgid, addr, 0, off);
}

uint32_t bt_mapcap_resolve_at(struct bt_mapcap *m, uint32_t tgid, uint64_t addr, uint64_t seen_ns, uint64_t *off)
{
	struct proc *p;
	const struct vma *v;
	uint64_t now;

	*off = addr;
	if (!tgid)
		return BT_MAP_NONE;
	if (m->nexited)
		expire_exited(m, bt_boottime_ns());
	p = proc_slot(m, tgid, 1);
	if (!p->read_ns)
		read_maps(m, p);
	v = find_vma(p, addr);
	now = bt_boottime_ns();
	if ((!v || v->file == BT_MAP_NONE) && !p->exit_ns &&
	    (now - p->read_ns >= (v ? REREAD_ANON_NS : REREAD_NS << p->same) ||
	     (!v && seen_ns > p->read_ns && p->read_ns - p->first_ns < YOUNG_NS))) {
		/* Outside what we knew: a library loaded since (dlopen), or
		 * the maps were read while the loader was still mapping the
		 * libraries, before this address was sampled. An exited
		 * process has no maps left to read. */
		read_maps(m, p);
		v = find_vma(p, addr);
	}
	if (!v || v->file == BT_MAP_NONE)
		return BT_MAP_NONE;
	if (!(m->files[v->file - 1].flags & BT_MAPFILE_TRIED))
		open_file(m, &m->files[v->file - 1], tgid, v);
	check_pins(m, bt_boottime_ns());
	*off = addr - v->start + v->pgoff;
	return v->file;
}

void bt_mapcap_forked(struct bt_mapcap *m, uint32_t child, uint32_t parent)
{
	m->forks[m->forks_next] = (struct fork_rec){ child, parent };
	m->forks_next = (m->forks_next + 1) % FORKS_MAX;
}

uint32_t bt_mapcap_parent(const struct bt_mapcap *m, uint32_t child)
{
	for (uint32_t k = 1; k <= FORKS_MAX; k++) { /* newest first: a pid reused */
		const struct fork_rec *f = &m->forks[(m->forks_next + FORKS_MAX - k) % FORKS_MAX];
		if (f->child == child)
			return f->parent;
	}
	return 0;
}

void bt_mapcap_set_path_source(struct bt_mapcap *m, bt_mapcap_path_fn fn, void *arg)
{
	m->path_fn = fn;
	m->path_arg = arg;
}

/* A mapping of file id in tgid, its maps read if they hold none (once:
 * the caller opens the file on its first frame only); NULL if there is
 * none, or the process is gone. */
static const struct vma *vma_of_file(struct bt_mapcap *m, uint32_t tgid, uint32_t id)
{
	struct proc *p = proc_slot(m, tgid, 1);

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < p->nvma; i++)
			if (p->vma[i].file == id)
				return &p->vma[i];
		if (pass || p->exit_ns)
			break;
		read_maps(m, p);
	}
	return NULL;
}

static uint32_t find_file(const struct bt_mapcap *m, uint64_t dev, uint64_t ino)
{
	for (size_t i = m->nfiles; i-- > 0;)
		if (m->files[i].dev == dev && m->files[i].ino == ino)
			return (uint32_t)i + 1;
	return 0;
}

uint32_t bt_mapcap_resolve_file(struct bt_mapcap *m, uint32_t tgid, uint32_t dev, uint64_t ino)
{
	const struct vma *v = NULL;
	struct proc *p = NULL;
	char path[4096];
	uint32_t id;

	if (!dev && !ino)
		return vdso_file(m);
	id = find_file(m, dev, ino);
	if (!id && tgid) {
		/* Not met yet: in the process's maps while it lives ... */
		p = proc_slot(m, tgid, 1);
		if (!p->read_ns && !p->exit_ns)
			read_maps(m, p);
		id = find_file(m, dev, ino);
	}
	/* ... or, once it is gone, by the path the unwinder opened it by. */
	if (!id && m->path_fn && m->path_fn(m->path_arg, dev, ino, path, sizeof(path)) == 0)
		id = file_id(m, dev, ino, path);
	if (!id || id == BT_MAP_NONE)
		return BT_MAP_NONE;
	if (!(m->files[id - 1].flags & BT_MAPFILE_TRIED)) {
		/* Opened once, for good: through a mapping of it, which a
		 * deleted file needs (its path opens nothing). The file may be
		 * known from another process's maps (a forked child's frame
		 * before any of its parent's): this one's are read, else its
		 * parent's, while they live. */
		uint32_t at = tgid, parent = tgid ? bt_mapcap_parent(m, tgid) : 0;

		v = tgid ? vma_of_file(m, tgid, id) : NULL;
		if (!v && parent && parent != tgid && (v = vma_of_file(m, parent, id)))
			at = parent;
		open_file(m, &m->files[id - 1], at, v);
	}
	check_pins(m, bt_boottime_ns());
	return id;
}

void bt_mapcap_forget(struct bt_mapcap *m, uint32_t tgid)
{
	struct proc *p = proc_slot(m, tgid, 0);

	if (p)
		forget_proc(p);
}

void bt_mapcap_exited(struct bt_mapcap *m, uint32_t tgid)
{
	struct proc *p = proc_slot(m, tgid, 0);
	uint64_t now = bt_boottime_ns();
	uint32_t slot;

	if (!p || !p->read_ns)
		return; /* nothing read: nothing to keep */
	expire_exited(m, now);
	if (m->nexited == EXITED_MAX)
		pop_exited(m); /* a storm of exits: the oldest goes first */
	p->exit_ns = now;
	slot = (m->exited_head + m->nexited++) % EXITED_MAX;
	m->exited[slot].tgid = tgid;
	m->exited[slot].exit_ns = now;
}
