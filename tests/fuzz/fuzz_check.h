/*
 * fuzz_check.h: invariant checks for fuzz harnesses. A violated invariant
 * aborts, which libFuzzer reports as a crash with the input that caused it
 * and the replay program turns into a failed test.
 */
#ifndef UWARP_FUZZ_CHECK_H
#define UWARP_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                     \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

#endif
