// SPDX-License-Identifier: MIT
/*
 * funcs_plugin.c - a shared library built with -finstrument-functions,
 * loaded with dlopen by app_funcs_edge (test_funcs_edge.sh): its functions
 * are named in a dump while the process lives (issue 36, item 6).
 */
static int plugin_leaf(int i)
{
	return i & 1;
}

int plugin_work(int i)
{
	return plugin_leaf(i) + plugin_leaf(i + 1);
}
