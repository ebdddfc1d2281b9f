/*
 * stream_paper.h: the dynamic stream protocol exactly as MacArthur and
 * Russell give it (IPDPS 2014, Figures 2 to 5; the UNH EXS design notes'
 * appendix scenarios), the rules of EXS_SP_PAPER. stream_proto.c calls
 * these for a machine in that mode, after the checks both modes share.
 * Internal to exs/; pure. docs/exs.md says where the two sources disagree
 * and which reading this is.
 *
 * Sender (Fig. 2). An even phase is direct, an odd one indirect. Adverts
 * are taken from the head of the queue. In a direct phase the head advert
 * is used as it is. In an indirect phase an advert is used only if its
 * phase is at least the sender's and its sequence number is exactly the
 * sender's stream position; the sender then adopts its phase (direct
 * again). Otherwise it is thrown away, and if its phase was higher than
 * the sender's, the sender's phase moves to the odd one after it, so that
 * the rest of that phase's adverts go too. With no advert left, the data
 * goes into the ring if there is room, and a direct phase becomes odd.
 *
 * Receiver. Fig. 3: no advert while the ring holds data (b_r), while an
 * advert of an earlier phase is outstanding (k_a), or while an earlier
 * receive is outstanding without one (k_b: receives are advertised in
 * order, and one that took data from the ring is never advertised); an
 * advert made in an odd phase first moves it to the next even one. It
 * carries S'_r, the estimated stream position, which then grows by the
 * receive's length with MSG_WAITALL and by 1 without. Fig. 4: an indirect
 * transfer arriving in an even phase moves it to the next odd one; a
 * direct one into a receive without MSG_WAITALL corrects S'_r by its
 * length - 1. Fig. 5: a copy out of the ring corrects S'_r the same way
 * (by its whole length for a receive never advertised), completes a
 * receive without MSG_WAITALL, and is acknowledged at once.
 */
#ifndef UWARP_EXS_STREAM_PAPER_H
#define UWARP_EXS_STREAM_PAPER_H

#include "stream_proto.h"

int exs_sp_paper_tx_advert(struct exs_sp_tx *t, const struct exs_sp_advert *a);
int exs_sp_paper_tx_next(struct exs_sp_tx *t, uint64_t avail, struct exs_sp_xfer *x);
int exs_sp_paper_rx_advert(struct exs_sp_rx *r, struct exs_sp_advert *a);
/* h, the head receive, has just taken len direct bytes under its advert */
void exs_sp_paper_rx_direct(struct exs_sp_rx *r, struct exs_sp_recv *h, uint32_t len);
/* an indirect transfer has arrived (its ring bookkeeping done) */
void exs_sp_paper_rx_indirect(struct exs_sp_rx *r);
/* the next copy into h, the head receive, which is not complete */
void exs_sp_paper_rx_drain(struct exs_sp_rx *r, struct exs_sp_recv *h, struct exs_sp_copy *cp);

#endif
