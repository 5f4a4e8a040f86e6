/* SPDX-License-Identifier: MIT */
/*
 * export_names.h - how the exporters name a frame's function: the dump's
 * symbol without its ELF symbol version ("memcpy@@GLIBC_2.14" is memcpy to
 * Perfetto, pprof and speedscope alike: profiles merge by name, and a
 * version is not part of the function).
 */
#ifndef BTRACE_EXPORT_NAMES_H
#define BTRACE_EXPORT_NAMES_H
#include <stddef.h>

/* Length of name without a trailing "@VER" or "@@VER" (VER: an upper-case
 * letter, then letters, digits, '_' and '.'). */
size_t bt_export_sym_len(const char *name);
#endif
