// SPDX-License-Identifier: MIT
/*
 * symbol_names.c - C++ demangling (libstdc++'s __cxa_demangle, loaded on
 * first use, so C programs do not need libstdc++) and the closest-name
 * suggestions of "symbol not found" messages.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbol_names.h"
#include "util.h"

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn demangler;
static int demangler_tried;

static cxa_demangle_fn get_demangler(void)
{
	if (!demangler_tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		demangler_tried = 1;
		if (h)
			demangler = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return demangler;
}

char *bt_demangle(const char *sym)
{
	cxa_demangle_fn f;
	int status = -1;
	char *r;

	if (!sym || strncmp(sym, "_Z", 2) != 0)
		return NULL;
	f = get_demangler();
	if (!f)
		return NULL;
	r = f(sym, NULL, NULL, &status);
	if (status != 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* Compare ignoring white space ("foo::bar(int, long)" == "foo::bar(int,long)"). */
int bt_demangled_eq(const char *a, const char *b)
{
	for (;;) {
		while (*a == ' ')
			a++;
		while (*b == ' ')
			b++;
		if (*a != *b)
			return 0;
		if (!*a)
			return 1;
		a++, b++;
	}
}

/* Past "operator" and its symbol at d[i] ("operator<<", "operator()",
 * "operator new"): where the scan goes on; i itself if not an operator. */
static size_t skip_operator(const char *d, size_t i)
{
	if (strncmp(d + i, "operator", 8) != 0 || (i > 0 && (isalnum((unsigned char)d[i - 1]) || d[i - 1] == '_')))
		return i;
	i += 8;
	if (d[i] == ' ') { /* operator new, operator int: the name runs to the '(' */
		while (d[i] && d[i] != '(')
			i++;
		return i;
	}
	if (strncmp(d + i, "()", 2) == 0 || strncmp(d + i, "[]", 2) == 0)
		return i + 2;
	while (d[i] && strchr("<>=!+-*/%^&|~,", d[i]))
		i++;
	return i;
}

/*
 * The function name of a demangled symbol: [*start, *start + len) without
 * the return type a template carries ("long tmax<long>(long, long)" ->
 * "tmax<long>") and without the parameter list ("ns::f(int) const" ->
 * "ns::f"). Template arguments in <> are kept.
 */
static size_t name_span(const char *d, size_t *start)
{
	int angle = 0, paren = 0;
	size_t i;

	*start = 0;
	for (i = 0; d[i]; i++) {
		size_t j = skip_operator(d, i);

		if (j != i) {
			i = j - 1;
			continue;
		}
		if (d[i] == '<')
			angle++;
		else if (d[i] == '>')
			angle--;
		else if (d[i] == '(' && angle <= 0 && paren == 0 && i > 0)
			return i - *start;
		else if (d[i] == '(')
			paren++;
		else if (d[i] == ')')
			paren--;
		else if (d[i] == ' ' && angle <= 0 && paren == 0 && strncmp(d + i, " [clone ", 8) != 0)
			*start = i + 1; /* what came before is the return type */
	}
	return i - *start;
}

size_t bt_demangled_base_len(const char *d)
{
	size_t start, len = name_span(d, &start);

	return start + len;
}

const char *bt_demangled_name(const char *d, size_t *len)
{
	size_t start;

	*len = name_span(d, &start);
	return d + start;
}

const char *bt_demangled_sig(const char *d)
{
	size_t start;

	name_span(d, &start);
	return d + start;
}

int bt_demangled_is_clone(const char *d)
{
	return strstr(d, " [clone .") != NULL;
}

int bt_demangler_available(void)
{
	return get_demangler() != NULL;
}

/* ---- suggestions ---------------------------------------------------------------- */

unsigned bt_edit_distance(const char *a, const char *b)
{
	unsigned row[256], la = (unsigned)strnlen(a, 255), lb = (unsigned)strnlen(b, 255);

	for (unsigned j = 0; j <= lb; j++)
		row[j] = j;
	for (unsigned i = 1; i <= la; i++) {
		unsigned diag = row[0], t;

		row[0] = i;
		for (unsigned j = 1; j <= lb; j++) {
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			t = row[j];
			row[j] = best;
			diag = t;
		}
	}
	return row[lb];
}

/* Offer `cand` (a symbol or demangled base name) as a suggestion for `q`. */
void bt_suggest_add(struct bt_suggest *sg, const char *q, const char *cand)
{
	size_t lq = strlen(q), lc = strlen(cand);
	unsigned score, limit = lq < 6 ? 2 : (unsigned)(lq / 3);

	if (lc > 255 || !lc)
		return;
	/* Substring either way ("alloc" -> "malloc", "foo::bar" for "bar"):
	 * as good as one edit, ranked by the length difference. */
	if ((lq >= 3 && strstr(cand, q)) || (lc >= 3 && strstr(q, cand)))
		score = 1 + (unsigned)(lc > lq ? lc - lq : lq - lc) / 4;
	else if ((lc > lq ? lc - lq : lq - lc) > limit)
		return;
	else
		score = bt_edit_distance(q, cand) * 2;
	if (score > limit * 2)
		return;
	for (size_t i = 0; i < sg->n; i++)
		if (strcmp(sg->name[i], cand) == 0)
			return;
	size_t pos = sg->n;
	while (pos > 0 && sg->score[pos - 1] > score)
		pos--;
	if (pos >= BT_NSUGGEST)
		return;
	if (sg->n < BT_NSUGGEST)
		sg->n++;
	for (size_t i = sg->n - 1; i > pos; i--) {
		memcpy(sg->name[i], sg->name[i - 1], sizeof(sg->name[i]));
		sg->score[i] = sg->score[i - 1];
	}
	memcpy(sg->name[pos], cand, lc + 1);
	sg->score[pos] = score;
}

char *bt_suggest_format(const struct bt_suggest *sg)
{
	char *s = strdup("");

	for (size_t i = 0; i < sg->n && s; i++)
		if (bt_strcatf(&s, "%s%s", i ? ", " : "", sg->name[i])) {
			free(s);
			return NULL;
		}
	return s;
}
