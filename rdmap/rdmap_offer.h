/*
 * rdmap_offer.h: how two uwarp peers agree to use the RFC 7306 extensions
 * (atomics and Immediate Data), which siw and other stacks do not speak.
 *
 * MPA has no field for it (RFC 7306 leaves the agreement to the ULP), so
 * the offer rides at the end of the MPA private data: an 8-byte trailer,
 * the seven bytes "uWx7306" and a flag byte whose low bit offers the
 * extensions. The receiving side strips it before the application sees the
 * private data. The initiator offers unless its application turned the
 * extensions off (uw_conn_param.no_extensions) or the private data has no
 * room; a responder answers only an offer. A peer that does not know the
 * trailer (siw) sees 8 more bytes of private data, which MPA allows
 * (docs/wire-notes.md, "How uwarp peers agree on RFC 7306").
 */
#ifndef UWARP_RDMAP_OFFER_H
#define UWARP_RDMAP_OFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDMAP_OFFER_LEN 8

/* The private data's length without a trailer at its end, if it has one;
 * *offered: the trailer offers the extensions. */
size_t rdmap_offer_strip(const uint8_t *pd, size_t len, bool *offered);

/* Put the trailer after @len bytes of private data (room for
 * RDMAP_OFFER_LEN more is the caller's); the new length. */
size_t rdmap_offer_append(uint8_t *pd, size_t len);

#endif
