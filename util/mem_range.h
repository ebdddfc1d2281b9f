/*
 * mem_range.h: may this process's memory in [addr, addr + len) be used?
 *
 * ibv_reg_mr fails with EFAULT on memory that is not mapped (the kernel
 * pins the pages); uwarp registers by remembering the range, so it asks the
 * kernel instead, and a buffer a program passes without registering it is
 * checked the same way before uwarp reads or writes it. msync(MS_ASYNC)
 * fails with ENOMEM when the range is not wholly mapped and does nothing
 * else: one system call whatever the length, as it walks mappings, not
 * pages. (Mapped memory without the access asked for, PROT_NONE say, is not
 * caught: that would need /proc/self/maps.)
 */
#ifndef UWARP_MEM_RANGE_H
#define UWARP_MEM_RANGE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* 0; EINVAL when the range wraps the address space; EFAULT when part of
 * it is not mapped. An empty range is always fine. */
static inline int mem_range_check(const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	if (!len)
		return 0;
	if (a + len < a)
		return EINVAL;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = a & ~(page - 1);
	if (msync((void *)start, a + len - start, MS_ASYNC) == 0)
		return 0;
	return errno == ENOMEM ? EFAULT : errno;
}

#endif
