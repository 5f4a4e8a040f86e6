// SPDX-License-Identifier: MIT
/*
 * app_trigger.c - an application traced in-process that asks the recorder
 * for dumps (tests/kernel/test_trigger.sh): waits until attached, then
 *   trigger      BTRACE_TRIGGER("stall") once
 *   slice MS     a slice "frame" of MS ms (app:frame>T)
 * Prints "attached" and "done" (stdout, unbuffered).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "btrace.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "trigger";
	long ms = argc > 2 ? atol(argv[2]) : 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	btrace_init("apptrig");
	for (int i = 0; i < 500 && !btrace_attached(); i++)
		sleep_ms(10);
	if (!btrace_attached()) {
		printf("not attached\n");
		return 1;
	}
	printf("attached\n");
	BTRACE_INSTANT("before");
	sleep_ms(100);
	if (!strcmp(mode, "trigger")) {
		BTRACE_TRIGGER("stall");
	} else {
		BTRACE_BEGIN("frame");
		sleep_ms(ms);
		BTRACE_END();
	}
	sleep_ms(100);
	BTRACE_INSTANT("after");
	sleep_ms(300);
	printf("done\n");
	return 0;
}
