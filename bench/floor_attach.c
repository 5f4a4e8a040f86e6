// SPDX-License-Identifier: MIT
/*
 * floor_attach.c - attach the do-nothing programs of bpf/empty.bpf.c to the
 * tracepoints `btrace-bpf record` uses, and hold them until SIGINT/SIGTERM.
 * The overhead floor of scripts/bench_record.sh: the same tracepoints, the
 * same attach mechanism (tp_btf), none of the recorder's work.
 *
 *   floor_attach [-e GROUPS]    GROUPS: comma list of sched, irq, power,
 *                               syscalls, or all (default sched,irq,power,
 *                               as record's default)
 *
 * Prints "floor_attach: ready: N programs attached (pid P)" on stderr once
 * every program is attached; a script waits for that line. Tracepoints the
 * kernel lacks are skipped with a warning, as the recorder does. Exit 0 on a
 * signal, 1 on a setup error, 2 on a usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "empty.skel.h"

#define MAX_LINKS 64

static const char *const groups[] = { "sched", "irq", "power", "syscalls" };
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))
#define DEFAULT_GROUPS 0x7u /* sched, irq, power */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int parse_groups(const char *s, unsigned *mask)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	*mask = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t g;

		if (strcmp(tok, "all") == 0) {
			*mask |= (1u << NGROUPS) - 1;
			continue;
		}
		for (g = 0; g < NGROUPS; g++)
			if (strcmp(tok, groups[g]) == 0)
				break;
		if (g == NGROUPS) {
			ret = -EINVAL;
			break;
		}
		*mask |= 1u << g;
	}
	free(copy);
	return ret ? ret : (*mask ? 0 : -EINVAL);
}

/* "empty_sched__sched_switch" -> group index of "sched", or -1. */
static int prog_group(const char *name)
{
	const char *sep = strstr(name, "__");

	if (strncmp(name, "empty_", 6) || !sep)
		return -1;
	for (size_t g = 0; g < NGROUPS; g++)
		if (strlen(groups[g]) == (size_t)(sep - name - 6) &&
		    strncmp(name + 6, groups[g], (size_t)(sep - name - 6)) == 0)
			return (int)g;
	return -1;
}

static int tracepoint_exists(const struct btf *vmlinux, const char *tp)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[MAX_LINKS];
	struct empty_bpf *skel = NULL;
	struct bpf_program *prog;
	struct btf *vmlinux = NULL;
	struct sigaction sa;
	sigset_t block, waitmask;
	unsigned mask = DEFAULT_GROUPS, nlinks = 0;
	int opt, ret = 1, waking = 0;

	while ((opt = getopt(argc, argv, "e:wh")) != -1) {
		switch (opt) {
		case 'w': /* as record --waking */
			waking = 1;
			break;
		case 'e':
			if (parse_groups(optarg, &mask)) {
				fprintf(stderr, "floor_attach: invalid -e '%s': give a comma list of "
					"sched, irq, power, syscalls, or all\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: floor_attach [-e GROUPS] [-w]\n");
			return opt == 'h' ? 0 : 2;
		}
	}

	/* Signals before attaching: a SIGTERM sent right after "ready" is seen. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	libbpf_set_print(quiet_print);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		fprintf(stderr, "floor_attach: cannot read the kernel's BTF: %s\n", strerror(errno));
		goto out;
	}
	skel = empty_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor_attach: cannot open the BPF object: %s\n", strerror(errno));
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		const char *sec = bpf_program__section_name(prog);
		const char *tp = strchr(sec, '/') ? strchr(sec, '/') + 1 : sec;
		int g = prog_group(bpf_program__name(prog));
		int on = g >= 0 && (mask & (1u << g));

		if (strstr(bpf_program__name(prog), "sched_waking"))
			on = on && waking; /* record attaches it only with --waking */

		if (on && !tracepoint_exists(vmlinux, tp)) {
			fprintf(stderr, "floor_attach: tracepoint %s not in this kernel: skipped\n", tp);
			on = 0;
		}
		bpf_program__set_autoload(prog, on);
	}
	ret = empty_bpf__load(skel);
	if (ret) {
		fprintf(stderr, "floor_attach: cannot load the BPF programs: %s (need root)\n",
			strerror(-ret));
		ret = 1;
		goto out;
	}
	ret = 1;
	bpf_object__for_each_program(prog, skel->obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			fprintf(stderr, "floor_attach: cannot attach %s: %s\n",
				bpf_program__section_name(prog), strerror(errno));
			goto out;
		}
		links[nlinks++] = link;
	}
	if (!nlinks) {
		fprintf(stderr, "floor_attach: no program attached\n");
		goto out;
	}
	fprintf(stderr, "floor_attach: ready: %u programs attached (pid %d)\n", nlinks,
		(int)getpid());
	while (!stop)
		sigsuspend(&waitmask);
	ret = 0;
out:
	while (nlinks)
		bpf_link__destroy(links[--nlinks]);
	empty_bpf__destroy(skel);
	btf__free(vmlinux);
	return ret;
}
