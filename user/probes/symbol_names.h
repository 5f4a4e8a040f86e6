/* SPDX-License-Identifier: MIT */
/* symbol_names.h - C++ demangling and closest-name suggestions for symbol
 * lookups. */
#ifndef BTRACE_SYMBOL_NAMES_H
#define BTRACE_SYMBOL_NAMES_H
#include <stddef.h>

/* The C++ demangling of `sym` (malloc'd), NULL if not mangled or no
 * demangler (libstdc++ is loaded on first use). */
char *bt_demangle(const char *sym);

/* Levenshtein distance (strings cut at 255 characters). */
unsigned bt_edit_distance(const char *a, const char *b);

/* Is a demangler there (libstdc++ loadable)? */
int bt_demangler_available(void);
/* Compare ignoring white space ("foo::bar(int, long)" == "foo::bar(int,long)"). */
int bt_demangled_eq(const char *a, const char *b);
/* Length of a demangled name without its parameter list: "ns::f(int) const"
 * -> "ns::f". Template arguments in <> are kept. */
size_t bt_demangled_base_len(const char *d);
/* The name alone, without a template's return type nor the parameters:
 * "long tmax<long>(long, long)" -> "tmax<long>" (len), "ns::f(int)" -> "ns::f". */
const char *bt_demangled_name(const char *d, size_t *len);
/* The signature without a template's return type: "tmax<long>(long, long)". */
const char *bt_demangled_sig(const char *d);
/* A compiler clone, not a function of the source: "f(int) [clone .cold]"
 * (also .part.N, .isra.N, .constprop.N, .lto_priv.N). */
int bt_demangled_is_clone(const char *d);

/* The closest names to a query, best first (at most BT_NSUGGEST). */
#define BT_NSUGGEST 4
struct bt_suggest {
	char name[BT_NSUGGEST][256];
	unsigned score[BT_NSUGGEST];
	size_t n;
};
/* Offer `cand` (a symbol or demangled base name) as a suggestion for `q`. */
void bt_suggest_add(struct bt_suggest *sg, const char *q, const char *cand);
/* "a, b, c" (malloc'd; NULL if out of memory). */
char *bt_suggest_format(const struct bt_suggest *sg);
#endif
