// SPDX-License-Identifier: MIT
/*
 * dump_triggers.c - the TRIG section of a dump (docs/dump-format.md): the
 * recorder's triggers with their counts, and the hit that caused the dump.
 * Encoded into one payload the writer stores as a section; decoded with the
 * same strictness as every other section (framing, counts, index ranges;
 * strings are forced NUL-terminated).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "dump_format.h"

#define CPY(dst, src) \
	do { memcpy((dst), (src), sizeof(dst) < sizeof(src) ? sizeof(dst) : sizeof(src)); (dst)[sizeof(dst) - 1] = 0; } while (0)

int64_t bt_dump_triggers_encode(const struct bt_dump_trigger *t, size_t nt, const struct bt_trigger_fired *f,
				size_t nf, uint8_t **out)
{
	struct btd_trig_head h = { .ntriggers = (uint32_t)nt, .trig_size = sizeof(struct btd_trigger),
				   .nfired = (uint32_t)nf, .fired_size = sizeof(struct btd_fired) };
	size_t len = sizeof(h) + nt * sizeof(struct btd_trigger) + nf * sizeof(struct btd_fired);
	uint8_t *p, *o;

	if (nt > BTD_MAX_TRIGGERS || nf > BTD_MAX_TRIGGERS)
		return -E2BIG;
	p = o = calloc(1, len);
	if (!p)
		return -ENOMEM;
	memcpy(o, &h, sizeof(h));
	o += sizeof(h);
	for (size_t i = 0; i < nt; i++, o += sizeof(struct btd_trigger)) {
		struct btd_trigger r = { .kind = t[i].kind, .threshold_ns = t[i].threshold_ns,
					 .after_ns = t[i].after_ns, .limit_ns = t[i].limit_ns, .hits = t[i].st.hits,
					 .dumps = t[i].st.dumps, .skipped = t[i].st.skipped, .lost = t[i].st.lost,
					 .merged = t[i].st.merged, .limited = t[i].st.limited,
					 .dropped = t[i].st.dropped, .pending = t[i].st.pending,
					 .unnamed = t[i].unnamed };

		CPY(r.name, t[i].name);
		CPY(r.cond, t[i].cond);
		memcpy(o, &r, sizeof(r));
	}
	for (size_t i = 0; i < nf; i++, o += sizeof(struct btd_fired)) {
		struct btd_fired r = { .trig = f[i].trig, .kind = f[i].kind, .ts_ns = f[i].ts_ns, .seen_ns = f[i].seen_ns,
				       .due_ns = f[i].due_ns, .value = f[i].value, .threshold_ns = f[i].threshold_ns,
				       .aux = f[i].aux, .tid = f[i].tid, .tgid = f[i].tgid, .cpu = f[i].cpu };

		CPY(r.comm, f[i].comm);
		CPY(r.name, f[i].name);
		CPY(r.cond, f[i].cond);
		memcpy(o, &r, sizeof(r));
	}
	*out = p;
	return (int64_t)len;
}

int bt_dump_triggers_decode(const uint8_t *p, uint64_t len, struct bt_dump_trigger **tp, size_t *ntp,
			    struct bt_trigger_fired **fp, size_t *nfp, char *err, size_t errlen)
{
	struct btd_trig_head h;
	struct bt_dump_trigger *t = NULL;
	struct bt_trigger_fired *f = NULL;
	uint64_t need;

	if (len < sizeof(h)) {
		snprintf(err, errlen, "corrupt dump: trigger section too short (%llu bytes)", (unsigned long long)len);
		return -EINVAL;
	}
	memcpy(&h, p, sizeof(h));
	if (h.ntriggers > BTD_MAX_TRIGGERS || h.nfired > BTD_MAX_TRIGGERS ||
	    (h.ntriggers && h.trig_size < BTD_TRIGGER_V1_SIZE) ||
	    (h.nfired && h.fired_size < sizeof(struct btd_fired)) || h.trig_size > 65536 || h.fired_size > 65536) {
		snprintf(err, errlen, "corrupt dump: trigger section header (%u triggers of %u bytes, %u hits of %u bytes)",
			 h.ntriggers, h.trig_size, h.nfired, h.fired_size);
		return -EINVAL;
	}
	need = sizeof(h) + (uint64_t)h.ntriggers * h.trig_size + (uint64_t)h.nfired * h.fired_size;
	if (need != len) {
		snprintf(err, errlen, "corrupt dump: trigger section is %llu bytes, its counts say %llu",
			 (unsigned long long)len, (unsigned long long)need);
		return -EINVAL;
	}
	t = calloc(h.ntriggers ? h.ntriggers : 1, sizeof(*t));
	f = calloc(h.nfired ? h.nfired : 1, sizeof(*f));
	if (!t || !f) {
		free(t);
		free(f);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p += sizeof(h);
	for (uint32_t i = 0; i < h.ntriggers; i++, p += h.trig_size) {
		struct btd_trigger r;

		memset(&r, 0, sizeof(r));
		memcpy(&r, p, h.trig_size < sizeof(r) ? h.trig_size : sizeof(r));
		CPY(t[i].name, r.name);
		CPY(t[i].cond, r.cond);
		t[i].kind = r.kind;
		t[i].threshold_ns = r.threshold_ns;
		t[i].after_ns = r.after_ns;
		t[i].limit_ns = r.limit_ns;
		t[i].st.hits = r.hits;
		t[i].st.dumps = r.dumps;
		t[i].st.skipped = r.skipped;
		t[i].st.lost = r.lost;
		if (h.trig_size >= BTD_TRIGGER_V2_SIZE) {
			t[i].st.merged = r.merged;
			t[i].st.limited = r.limited;
			t[i].st.dropped = r.dropped;
			t[i].st.pending = r.pending;
			t[i].unnamed = r.unnamed; /* zero in a V2 record (memset) */
		} else { /* an older recorder: skipped were all rate-limited, lost dropped */
			t[i].st.limited = r.skipped;
			t[i].st.dropped = r.lost;
			uint64_t ended = r.dumps + r.skipped + r.lost;
			t[i].st.pending = r.hits > ended ? r.hits - ended : 0;
		}
	}
	for (uint32_t i = 0; i < h.nfired; i++, p += h.fired_size) {
		struct btd_fired r;

		memcpy(&r, p, sizeof(r));
		if (r.trig >= h.ntriggers) {
			free(t);
			free(f);
			snprintf(err, errlen, "corrupt dump: trigger hit %u names trigger %u of %u", i, r.trig, h.ntriggers);
			return -EINVAL;
		}
		f[i].trig = r.trig;
		f[i].kind = r.kind;
		f[i].ts_ns = r.ts_ns;
		f[i].seen_ns = r.seen_ns;
		f[i].due_ns = r.due_ns;
		f[i].value = r.value;
		f[i].threshold_ns = r.threshold_ns;
		f[i].aux = r.aux;
		f[i].tid = r.tid;
		f[i].tgid = r.tgid;
		f[i].cpu = r.cpu;
		CPY(f[i].comm, r.comm);
		CPY(f[i].name, r.name);
		CPY(f[i].cond, r.cond);
	}
	*tp = t;
	*ntp = h.ntriggers;
	*fp = f;
	*nfp = h.nfired;
	return 0;
}
