/*
 * fpdu_size.c: how big an FPDU may be.
 */
#include "fpdu.h"

uint32_t fpdu_mulpdu(uint32_t emss, bool markers)
{
	uint32_t overhead;

	if (emss > MPA_FPDU_MAX)
		emss = MPA_FPDU_MAX;
	/* RFC 5044 section 8.2: length field + CRC, alignment, and with
	 * markers one marker per 512 octets the segment may span. */
	overhead = MPA_ULPDU_LEN_SIZE + MPA_CRC_SIZE + emss % MPA_ALIGN;
	if (markers)
		overhead +=
			MPA_MARKER_SIZE * ((emss + MPA_MARKER_INTERVAL - 1) / MPA_MARKER_INTERVAL);
	return emss > overhead ? emss - overhead : 0;
}

uint32_t fpdu_ulpdu_max(enum fpdu_size_policy policy, uint32_t emss, bool markers)
{
	if (policy == FPDU_SIZE_LARGE)
		emss = MPA_FPDU_MAX;
	return fpdu_mulpdu(emss, markers);
}
