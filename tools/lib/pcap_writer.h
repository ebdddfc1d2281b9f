/*
 * pcap_writer.h: write a TCP conversation to a classic pcap file with
 * synthetic Ethernet/IPv4/TCP headers, so tools such as tshark can decode
 * byte streams that uwarp produced without any network traffic.
 *
 * Direction 0 is client to server, 1 is server to client. Each call to
 * pcapw_segment() becomes one TCP segment (Wireshark's MPA dissector wants
 * each FPDU in a segment of its own).
 */
#ifndef UWARP_PCAP_WRITER_H
#define UWARP_PCAP_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PCAPW_MAX_SEGMENT 65495 /* IPv4 total length 65535 - 20 - 20 */

struct pcapw {
	FILE *f;
	uint32_t ip[2]; /* host byte order: [0] client, [1] server */
	uint16_t port[2];
	uint32_t seq[2]; /* next sequence number each direction sends */
	uint64_t usec;   /* timestamp of the next packet */
	uint16_t ip_id;
};

/* Create the file and write the three-way handshake. Returns 0 or -errno. */
int pcapw_open(struct pcapw *w, const char *path, uint32_t client_ip, uint16_t client_port,
	       uint32_t server_ip, uint16_t server_port);
/* One data segment from dir (0 or 1), PSH|ACK. -EMSGSIZE above PCAPW_MAX_SEGMENT. */
int pcapw_segment(struct pcapw *w, int dir, const void *data, size_t len);
/* FIN both ways, then close the file. */
int pcapw_close(struct pcapw *w);

#endif
