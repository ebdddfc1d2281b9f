/*
 * pcap_writer.c: synthetic TCP conversations in pcap format.
 */
#include "pcap_writer.h"

#include <errno.h>
#include <string.h>

#define LINKTYPE_ETHERNET 1
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static int write_le32(FILE *f, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	return fwrite(b, 1, 4, f) == 4 ? 0 : -EIO;
}

static int packet(struct pcapw *w, int dir, uint8_t flags, const void *data, size_t len)
{
	uint8_t h[14 + 20 + 20];
	uint8_t *eth = h, *ip = h + 14, *tcp = h + 34;
	uint32_t s;

	memset(h, 0, sizeof(h));
	/* locally administered MACs, one per end */
	eth[0] = 0x02;
	eth[5] = (uint8_t)(2 - dir);
	eth[6] = 0x02;
	eth[11] = (uint8_t)(1 + dir);
	put16(eth + 12, 0x0800);

	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + 20 + len));
	put16(ip + 4, w->ip_id++);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, w->ip[dir]);
	put32(ip + 16, w->ip[!dir]);
	put16(ip + 10, fold(sum16(0, ip, 20)));

	put16(tcp, w->port[dir]);
	put16(tcp + 2, w->port[!dir]);
	put32(tcp + 4, w->seq[dir]);
	put32(tcp + 8, (flags & TCP_ACK) ? w->seq[!dir] : 0);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	put16(tcp + 14, 65535);
	/* TCP checksum over the pseudo-header, header and payload. */
	s = sum16(0, ip + 12, 8);
	s += 6 + 20 + (uint32_t)len;
	s = sum16(s, tcp, 20);
	s = sum16(s, data, len);
	put16(tcp + 16, fold(s));

	uint32_t caplen = (uint32_t)(sizeof(h) + len);
	if (write_le32(w->f, (uint32_t)(w->usec / 1000000)) ||
	    write_le32(w->f, (uint32_t)(w->usec % 1000000)) || write_le32(w->f, caplen) ||
	    write_le32(w->f, caplen) || fwrite(h, 1, sizeof(h), w->f) != sizeof(h) ||
	    (len && fwrite(data, 1, len, w->f) != len))
		return -EIO;
	w->usec += 10;
	w->seq[dir] += (uint32_t)len + ((flags & (TCP_SYN | TCP_FIN)) ? 1 : 0);
	return 0;
}

int pcapw_open(struct pcapw *w, const char *path, uint32_t client_ip, uint16_t client_port,
	       uint32_t server_ip, uint16_t server_port)
{
	memset(w, 0, sizeof(*w));
	w->f = fopen(path, "wb");
	if (!w->f)
		return -errno;
	w->ip[0] = client_ip;
	w->ip[1] = server_ip;
	w->port[0] = client_port;
	w->port[1] = server_port;
	w->seq[0] = 0x10000000;
	w->seq[1] = 0x20000000;
	w->usec = 1700000000ull * 1000000;

	/* classic pcap, microseconds, snaplen 262144 */
	if (write_le32(w->f, 0xa1b2c3d4) || write_le32(w->f, 2u | 4u << 16) ||
	    write_le32(w->f, 0) || write_le32(w->f, 0) || write_le32(w->f, 262144) ||
	    write_le32(w->f, LINKTYPE_ETHERNET))
		return -EIO;
	int rc = packet(w, 0, TCP_SYN, NULL, 0);
	if (!rc)
		rc = packet(w, 1, TCP_SYN | TCP_ACK, NULL, 0);
	if (!rc)
		rc = packet(w, 0, TCP_ACK, NULL, 0);
	return rc;
}

int pcapw_segment(struct pcapw *w, int dir, const void *data, size_t len)
{
	if (len > PCAPW_MAX_SEGMENT)
		return -EMSGSIZE;
	return packet(w, dir & 1, TCP_PSH | TCP_ACK, data, len);
}

int pcapw_close(struct pcapw *w)
{
	int rc = packet(w, 0, TCP_FIN | TCP_ACK, NULL, 0);
	if (!rc)
		rc = packet(w, 1, TCP_FIN | TCP_ACK, NULL, 0);
	if (!rc)
		rc = packet(w, 0, TCP_ACK, NULL, 0);
	if (fclose(w->f) && !rc)
		rc = -EIO;
	w->f = NULL;
	return rc;
}
