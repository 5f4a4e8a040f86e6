// SPDX-License-Identifier: MIT
/*
 * record_checks.c - configuration errors found when recording starts, and
 * the probe targets resolved first (record_checks.h).
 *
 * Under the service a value checked only once BPF is loaded means a start,
 * a few hundred events, an exit 1 and a restart every RestartSec, forever;
 * found here it is one exit 2 that the unit does not restart.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "uprobes.h"
#include "record_checks.h"

static const char *const key_names[RK_MAX] = {
	[RK_BUFFER_SIZE] = "buffer-size",
	[RK_MAX_SIZE] = "max-size",
	[RK_BLOCK_SIZE] = "block-size",
	[RK_ACTIVE_BLOCKS] = "active-blocks",
	[RK_OUTPUT_DIR] = "output-dir",
	[RK_PID] = "pid",
	[RK_CTL] = "ctl",
	[RK_APP_BUFFER_SIZE] = "app-buffer-size",
	[RK_APP_BLOCK_SIZE] = "app-block-size",
	[RK_MAX_APPS] = "max-apps",
};

static void conf_verr(const char *name, const char *where, const char *fmt, va_list ap)
{
	char *msg = NULL; /* any length: a probe's message is never cut */

	if (vasprintf(&msg, fmt, ap) < 0) {
		bt_err("%s: out of memory", name);
		return;
	}
	if (where)
		bt_err("%s: %s: %s", where, name, msg);
	else
		bt_err("%s", msg);
	free(msg);
}

void record_conf_err(const char *name, const char *where, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_verr(name, where, fmt, ap);
	va_end(ap);
}

void record_key_err(const struct record_opts *o, enum record_key k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_verr(key_names[k], o->where[k], fmt, ap);
	va_end(ap);
}

/* One spec resolved for pid (0: every process). 0, or -1 after saying why. */
static int resolve_one(const char *spec, int usdt, int pid, const char *name, const char *where, const char *prefix)
{
	const char *specs[1] = { spec };
	struct bt_uprobe_opts uo = {
		.specs = usdt ? NULL : specs, .nspecs = usdt ? 0 : 1,
		.usdts = usdt ? specs : NULL, .nusdts = usdt ? 1 : 0,
		.pids = pid ? &pid : NULL, .npids = pid ? 1 : 0,
	};
	struct bt_probe_desc *tab = NULL;
	char *err = NULL; /* any length: a probe's message is never cut */
	size_t n = 0;
	int r = bt_uprobes_resolve(&uo, &tab, &n, &err);

	free(tab);
	if (r)
		record_conf_err(name, where, "%s%s", prefix, err ? err : "cannot resolve the probe");
	free(err);
	return r ? -1 : 0;
}

int record_check_probes(const struct record_opts *o)
{
	int pid = (int)o->filter_tgid;
	size_t ntrig_up = 0, i;

	/* cmd_record.c appends the uprobe: triggers' probes after the -u ones */
	for (i = 0; i < o->ntriggers; i++)
		ntrig_up += o->triggers[i].kind == BT_TRIG_UPROBE;
	for (i = 0; i < o->nuspecs; i++) {
		const char *name = i + ntrig_up < o->nuspecs ? "uprobe" :
				   o->trigger_spec && !strcmp(o->uspecs[i], o->trigger_spec) ? "trigger-uprobe" : "trigger";

		if (resolve_one(o->uspecs[i], 0, pid, name, o->uwhere ? o->uwhere[i] : NULL, ""))
			return -1;
	}
	for (i = 0; i < o->nusdts; i++)
		if (resolve_one(o->usdts[i], 1, pid, "usdt", o->udwhere ? o->udwhere[i] : NULL, ""))
			return -1;
	for (i = 0; i < o->ntriggers; i++) {
		const struct bt_trigger_spec *s = &o->triggers[i];
		char prefix[600];

		if (s->kind != BT_TRIG_FUNC)
			continue;
		snprintf(prefix, sizeof(prefix), "--trigger '%s': ", s->cond);
		if (resolve_one(s->arg, 0, (int)s->tgid, "trigger", o->twhere ? o->twhere[i] : NULL, prefix))
			return -1;
	}
	return 0;
}

void record_opts_free_where(struct record_opts *o)
{
	for (int k = 0; k < RK_MAX; k++)
		free(o->where[k]);
	for (size_t i = 0; o->uwhere && i < o->nuspecs; i++)
		free(o->uwhere[i]);
	for (size_t i = 0; o->udwhere && i < o->nusdts; i++)
		free(o->udwhere[i]);
	for (size_t i = 0; o->twhere && i < o->ntriggers; i++)
		free(o->twhere[i]);
	free(o->uwhere);
	free(o->udwhere);
	free(o->twhere);
	memset(o->where, 0, sizeof(o->where));
	o->uwhere = o->udwhere = o->twhere = NULL;
}
