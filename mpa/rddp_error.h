/*
 * rddp_error.h: an error as a Terminate reports it (RFC 6580): the layer
 * that detected it, the error type and code, and a short human reason.
 * Every layer's receive path reports failures this way.
 */
#ifndef UWARP_RDDP_ERROR_H
#define UWARP_RDDP_ERROR_H

#include <stdint.h>

struct rddp_error {
	uint8_t layer; /* enum uw_term_layer */
	uint8_t etype;
	uint8_t ecode;
	const char *what;
};

static inline void rddp_error_set(struct rddp_error *e, uint8_t layer, uint8_t etype, uint8_t ecode,
				  const char *what)
{
	e->layer = layer;
	e->etype = etype;
	e->ecode = ecode;
	e->what = what;
}

#endif
