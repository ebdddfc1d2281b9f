/*
 * evfd.h: an eventfd used as a flag that poll(2) and epoll see: readable
 * while raised, quiet once lowered.
 *
 * Completion channels, CM event channels, the ES-API's queues and wake-ups,
 * the uDAPL EVDs and CNOs and esock's completion queues all tell a sleeping
 * thread "something is waiting" this way. The flag is raised and lowered
 * with glibc's eventfd_write and eventfd_read, which reach the kernel
 * without going through the read(2) and write(2) symbols: when esock is
 * preloaded it replaces those, and the library's own signals must not pass
 * through its socket layer.
 */
#ifndef UWARP_UTIL_EVFD_H
#define UWARP_UTIL_EVFD_H

#include <sys/eventfd.h>

/* a new flag, lowered: non-blocking, closed on exec; -1 and errno */
static inline int util_evfd_open(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/* Raise it: readable until lowered. Raising a raised flag changes nothing
 * (the counter is 64 bits wide: it cannot fill). */
static inline void util_evfd_raise(int fd) { (void)eventfd_write(fd, 1); }

/* Lower it: quiet until raised again. Lowering a lowered flag is fine. */
static inline void util_evfd_lower(int fd)
{
	eventfd_t v;
	(void)eventfd_read(fd, &v);
}

#endif
