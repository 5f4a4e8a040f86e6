// SPDX-License-Identifier: MIT
/*
 * stack_copy_walk.c - a user stack walked on from a BPF stack copy (see
 * stack_copy_walk.h). Each step is bt_uw_step's (bpf/unwind_walk.bpf.h):
 * the mapping of pc, its file's row (pc - 1 for return addresses), the CFA,
 * the return address at CFA - 8 and rbp restored; frame pointers where a
 * binary has no row. Memory is the copy's bytes: a word outside them ends
 * the walk as "stack copy ended".
 */
#include <errno.h>
#include <string.h>
#include "stack_copy_walk.h"
#include "dump_stacks.h"

_Static_assert((int)BT_CUT_ANON == (int)BT_WHY_ANON && (int)BT_CUT_NO_TABLE == (int)BT_WHY_NO_TABLE,
	       "the walker's reasons are the dump's");

size_t bt_copy_record_len(const struct bt_raw_stack_copy *c, size_t len)
{
	if (len < sizeof(*c) || c->nmaps > BT_UNWIND_MAPS || c->len > BT_STACK_COPY_BYTES || !c->nframes ||
	    c->nframes > BT_MAX_FRAMES)
		return 0;
	size_t need = sizeof(*c) + c->nmaps * sizeof(struct bt_unwind_map) + c->len;
	return need <= len ? need : 0;
}

/* The mapping holding pc (maps sorted by start), or NULL. */
static const struct bt_unwind_map *find_map(const struct bt_unwind_map *m, uint32_t n, uint64_t pc)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) { /* lo = the first mapping starting above pc */
		uint32_t mid = lo + (hi - lo) / 2;
		if (m[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc - m[lo - 1].start < m[lo - 1].len ? &m[lo - 1] : NULL;
}

/* A word of the copy at addr: 0, or -1 outside it. */
static int read_word(const struct bt_raw_stack_copy *c, const uint8_t *bytes, uint64_t addr, uint64_t *v)
{
	if (addr < c->sp || addr - c->sp > c->len || c->len - (addr - c->sp) < 8)
		return -1;
	memcpy(v, bytes + (addr - c->sp), 8);
	return 0;
}

/* The row for ELF address x in file f: its kind, offsets; BT_UROW_NONE if none. */
static void find_row(const struct bt_copy_tables *tb, const struct bt_unwind_file *f, uint64_t x,
		     struct bt_unwind_row *row)
{
	uint32_t lo = 0, hi = f->count;

	memset(row, 0, sizeof(*row));
	if ((uint64_t)f->first + f->count > tb->nrows)
		return; /* not what the BPF side would read either */
	while (lo < hi) { /* lo = 1 + the last row whose pc <= x */
		uint32_t mid = lo + (hi - lo) / 2;
		if (tb->rows[f->first + mid].pc <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo)
		*row = tb->rows[f->first + lo - 1];
}

/* pc in mapping m as the BPF walker emits it (bt_uw_step) */
static struct bt_stack_frame_file frame_file(const struct bt_unwind_map *m, uint64_t pc)
{
	uint64_t foff = pc - m->start + m->off;

	return (struct bt_stack_frame_file){ .ip = pc, .ino = m->ino,
					     .dev_off = m->kind == BT_UMAP_FILE && foff <= 0xffffffffull
								? (uint64_t)m->dev | foff << 32
								: BT_FRAME_NO_FILE };
}

int bt_copy_walk(const struct bt_raw_stack_copy *c, size_t len, const struct bt_copy_tables *tb, uint32_t max_new,
		 int give_up, struct bt_copy_walk *out)
{
	if (!bt_copy_record_len(c, len))
		return -EINVAL;
	const struct bt_unwind_map *maps = (const void *)c->data;
	const uint8_t *bytes = c->data + c->nmaps * sizeof(struct bt_unwind_map);
	uint64_t pc = c->pc, sp = c->sp, bp = c->bp;
	uint32_t idx = c->nframes - 1; /* the stop frame: in the definition already */

	out->n = 0;
	out->why = 0;
	out->stop = (struct bt_stack_frame_file){ .ip = pc, .dev_off = BT_FRAME_NO_FILE };
	for (;; idx++) {
		const struct bt_unwind_map *m = find_map(maps, c->nmaps, pc);
		if (m && idx == c->nframes - 1)
			out->stop = frame_file(m, pc);
		if (!m) {
			out->why = BT_WHY_NO_MAP; /* junk from a broken chain: never a frame */
			return BT_COPYW_DONE;
		}
		if (idx >= c->nframes) {
			if (out->n >= max_new) {
				out->why = BT_WHY_DEPTH;
				return BT_COPYW_DONE;
			}
			out->fr[out->n++] = frame_file(m, pc);
		}
		if (m->kind == BT_UMAP_ANON) {
			out->why = BT_WHY_ANON;
			return BT_COPYW_DONE;
		}
		uint64_t x = pc - m->start + m->off - (idx ? 1 : 0), cfa, ra;
		struct bt_unwind_row row = { 0 };
		int notable = 1;
		if (m->kind == BT_UMAP_FILE) {
			struct bt_unwind_fkey fk = { .ino = m->ino, .dev = m->dev };
			struct bt_unwind_file f;
			if (tb->file(tb->arg, &fk, &f)) {
				if (!give_up)
					return BT_COPYW_WAIT;
				out->why = BT_WHY_NO_TABLE;
				return BT_COPYW_DONE;
			}
			notable = f.kind != BT_UMAP_FILE;
			int inseg = !f.nseg;
			for (uint32_t s = 0; s < BT_UNWIND_SEGS && s < f.nseg && !inseg; s++)
				if (m->off >= f.seg[s].lo && m->off < f.seg[s].hi) {
					x += (uint64_t)f.seg[s].delta;
					inseg = 1;
				}
			if (inseg && f.count && !notable)
				find_row(tb, &f, x, &row);
		}
		int bpo = row.bp_off8;
		uint64_t base, stored;
		unsigned reg = BT_UROW_REGNO(row.kind);
		switch (BT_UROW_KIND(row.kind)) {
		case BT_UROW_SP:
			cfa = sp + (uint64_t)row.cfa_off8 * 8;
			break;
		case BT_UROW_BP:
			cfa = bp + (uint64_t)row.cfa_off8 * 8;
			break;
		case BT_UROW_PLT:
			cfa = sp + 8 + ((int)(pc & 15) >= row.cfa_off8 ? 8 : 0);
			break;
		case BT_UROW_END:
			return BT_COPYW_DONE; /* the outermost frame: complete */
		case BT_UROW_SIGNAL:
			out->why = BT_WHY_SIGNAL;
			return BT_COPYW_DONE;
		case BT_UROW_DEREF:
			/* CFA stored in the frame (OpenSSL's assembly): on rsp or
			 * rbp, as the BPF walker follows it at any depth */
			if (reg == 7 || reg == 6) {
				base = (reg == 7 ? sp : bp) + (uint64_t)(int64_t)BT_UROW_DEREF_OFF8(row.cfa_off8) * 8;
				if (read_word(c, bytes, base, &stored)) {
					out->why = BT_WHY_COPY_SHORT;
					return BT_COPYW_DONE;
				}
				cfa = stored + (uint64_t)BT_UROW_DEREF_ADD8(row.cfa_off8) * 8;
				break;
			}
			/* another register, known in the leaf only */
			__attribute__((fallthrough));
		default:
			/* No call-frame information: frame pointers, if rbp can be one. */
			if (!bp && idx)
				return BT_COPYW_DONE; /* the ABI's outermost mark */
			if (bp <= sp || (bp & 7) || bp - sp > (64u << 20)) {
				out->why = notable ? BT_WHY_NO_TABLE : BT_WHY_BAD_FRAME;
				return BT_COPYW_DONE;
			}
			cfa = bp + 16;
			bpo = -2;
		}
		if (cfa <= sp) {
			out->why = BT_WHY_BAD_FRAME;
			return BT_COPYW_DONE;
		}
		if (read_word(c, bytes, cfa - 8, &ra) || (bpo && read_word(c, bytes, cfa + (int64_t)bpo * 8, &bp))) {
			out->why = BT_WHY_COPY_SHORT;
			return BT_COPYW_DONE;
		}
		sp = cfa;
		pc = ra;
		if (!ra)
			return BT_COPYW_DONE; /* a zero return address ends a chain */
	}
}
