/*
 * util/pages.h: large buffers straight from the kernel's zero pages.
 *
 * A connection's rings are megabytes, of which a request/reply exchange
 * uses a few pages. calloc returns such a block zeroed by memset once
 * malloc has recycled one (glibc raises its mmap threshold after a large
 * free, so the next block comes from the heap): every page is touched at
 * allocation, a page fault each and all of it resident. A private
 * anonymous mapping is zero and costs a page only where it is used.
 */
#ifndef UWARP_UTIL_PAGES_H
#define UWARP_UTIL_PAGES_H

#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

/* @n zeroed bytes, page-aligned; NULL when the kernel has no room */
static inline void *util_pages_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* what util_pages_alloc(@n) returned, or NULL */
static inline void util_pages_free(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}

/* Below this a block comes from malloc: a mapping is whole pages, and a
 * small queue (a QP of depth 1, 8 KiB in all) would grow to several. */
#define UTIL_PAGES_MIN (16u << 10)

/* @n zeroed bytes: a mapping from UTIL_PAGES_MIN up, calloc below */
static inline void *util_zalloc(size_t n)
{
	return n >= UTIL_PAGES_MIN ? util_pages_alloc(n) : calloc(1, n ? n : 1);
}

/* what util_zalloc(@n) returned, or NULL */
static inline void util_zfree(void *p, size_t n)
{
	if (n >= UTIL_PAGES_MIN)
		util_pages_free(p, n);
	else
		free(p);
}

#endif
