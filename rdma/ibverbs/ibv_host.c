/*
 * ibv_host.c: the device's identity from the host: its GID table and its
 * GUID.
 *
 * iWARP addresses peers by IP, so GIDs are informational: index 0 is the
 * first Ethernet interface's MAC in the GID's first six bytes (what siw
 * reports), then one GID per IP address of the host, IPv4 as an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d). The GUID is that MAC as an
 * EUI-64 (ff:fe in the middle, the universal/local bit flipped), as siw
 * and the Ethernet RNICs make theirs. A host with no Ethernet interface
 * (a container with only lo) gets a locally administered MAC made from its
 * host name, so the GUID is stable across runs.
 */
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "ibv_internal.h"

#define UWV_MAX_GIDS 32

/* The first Ethernet MAC in @list (NULL: none could be read), or one
 * made from the host name. */
static void host_mac(const struct ifaddrs *list, uint8_t mac[6])
{
	for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(void *)i->ifa_addr;
		static const uint8_t zero[6];
		if (ll->sll_halen != 6 || memcmp(ll->sll_addr, zero, 6) == 0)
			continue;
		memcpy(mac, ll->sll_addr, 6);
		return;
	}
	/* FNV-1a of the host name, made locally administered and unicast */
	char name[256] = "uwarp";
	gethostname(name, sizeof(name) - 1);
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	for (int k = 0; k < 6; k++)
		mac[k] = (uint8_t)(h >> (8 * k));
	mac[0] = (uint8_t)((mac[0] & 0xfe) | 0x02);
}

uint64_t uwv_host_guid(void)
{
	uint8_t mac[6], g[8];
	struct ifaddrs *list = NULL;
	if (getifaddrs(&list) != 0)
		list = NULL;
	host_mac(list, mac);
	if (list)
		freeifaddrs(list);
	g[0] = mac[0] ^ 0x02;
	g[1] = mac[1];
	g[2] = mac[2];
	g[3] = 0xff;
	g[4] = 0xfe;
	g[5] = mac[3];
	g[6] = mac[4];
	g[7] = mac[5];
	uint64_t v;
	memcpy(&v, g, 8); /* the bytes in wire order: network byte order */
	return v;
}

/* The table, made anew at each query: addresses come and go. */
static int gid_table(union ibv_gid *out, int max)
{
	struct ifaddrs *list = NULL;
	if (getifaddrs(&list) != 0)
		list = NULL;
	memset(&out[0], 0, sizeof(out[0]));
	host_mac(list, out[0].raw);
	int n = 1;
	for (struct ifaddrs *i = list; i && n < max; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		union ibv_gid *g = &out[n];
		memset(g, 0, sizeof(*g));
		if (i->ifa_addr->sa_family == AF_INET) {
			const struct sockaddr_in *a =
				(const struct sockaddr_in *)(void *)i->ifa_addr;
			g->raw[10] = 0xff;
			g->raw[11] = 0xff;
			memcpy(&g->raw[12], &a->sin_addr, 4);
			n++;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			const struct sockaddr_in6 *a =
				(const struct sockaddr_in6 *)(void *)i->ifa_addr;
			memcpy(g->raw, &a->sin6_addr, 16);
			n++;
		}
	}
	if (list)
		freeifaddrs(list);
	return n;
}

int uwv_host_gid_count(void)
{
	union ibv_gid t[UWV_MAX_GIDS];
	return gid_table(t, UWV_MAX_GIDS);
}

int uwv_host_gid(unsigned index, union ibv_gid *gid)
{
	union ibv_gid t[UWV_MAX_GIDS];
	int n = gid_table(t, UWV_MAX_GIDS);
	if (index >= (unsigned)n)
		return EINVAL;
	*gid = t[index];
	return 0;
}
