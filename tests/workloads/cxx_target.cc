// SPDX-License-Identifier: MIT
/*
 * cxx_target - a C++ program for symbol resolution tests (built with g++):
 *
 *   work(int)                 and five compiler clones of it, named as g++
 *                             names them (work(int) [clone .cold], .part.0,
 *                             .isra.0, .constprop.0, .lto_priv.0): not overloads
 *   tmax<long>(long, long)    templates: the demangled names carry the
 *   tmax<int>(int, int)       return type ("long tmax<long>(long, long)")
 *   only_cloned(int) [clone .constprop.0]   a function that exists only as a clone
 *
 * The clones are given their g++ names with asm labels, so the symbols are
 * there whatever the optimizer decides. Running it calls each function once
 * and prints the sum.
 */
#include <cstdio>

#define PROBED __attribute__((noipa, used))

PROBED int work(int x)
{
	return x * 3;
}

/* What g++ emits when it splits, specializes or localizes work(int). */
PROBED int work_cold(int x) __asm__("_Z4worki.cold");
PROBED int work_cold(int x) { return x - 1; }
PROBED int work_part(int x) __asm__("_Z4worki.part.0");
PROBED int work_part(int x) { return x - 2; }
PROBED int work_isra(int x) __asm__("_Z4worki.isra.0");
PROBED int work_isra(int x) { return x - 3; }
PROBED int work_constprop(int x) __asm__("_Z4worki.constprop.0");
PROBED int work_constprop(int x) { return x - 4; }
PROBED int work_lto(int x) __asm__("_Z4worki.lto_priv.0");
PROBED int work_lto(int x) { return x - 5; }
PROBED int only_cloned(int x) __asm__("_Z11only_clonedi.constprop.0");
PROBED int only_cloned(int x) { return x - 6; }

template <class T> PROBED T tmax(T a, T b)
{
	return a > b ? a : b;
}
template long tmax<long>(long, long);
template int tmax<int>(int, int);

int main()
{
	long s = work(1) + work_cold(1) + work_part(1) + work_isra(1) + work_constprop(1) + work_lto(1) +
		 only_cloned(1) + tmax<long>(2, 3) + tmax<int>(4, 5);

	std::printf("%ld\n", s);
	return 0;
}
