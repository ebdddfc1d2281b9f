/*
 * ibv_qp_table.c: the QPs of the process by number. librdmacm connects a
 * QP the program made itself with ibv_create_qp, named only by
 * conn_param.qp_num (rping -q), as the kernel's iWARP connection manager
 * finds a QP by its number; this table is how it finds ours.
 */
#include <pthread.h>

#include "ibv_internal.h"

#define BUCKETS 4096 /* looked up once per connection: chains stay short */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct uwv_qp *table[BUCKETS];

void uwv_qp_table_add(struct uwv_qp *q)
{
	pthread_mutex_lock(&lock);
	struct uwv_qp **b = &table[q->ibv.qp_num % BUCKETS];
	q->table_next = *b;
	*b = q;
	pthread_mutex_unlock(&lock);
}

void uwv_qp_table_remove(struct uwv_qp *q)
{
	pthread_mutex_lock(&lock);
	for (struct uwv_qp **p = &table[q->ibv.qp_num % BUCKETS]; *p; p = &(*p)->table_next)
		if (*p == q) {
			*p = q->table_next;
			break;
		}
	pthread_mutex_unlock(&lock);
}

struct ibv_qp *uwv_qp_by_num(uint32_t qp_num)
{
	struct uwv_qp *q;
	pthread_mutex_lock(&lock);
	for (q = table[qp_num % BUCKETS]; q; q = q->table_next)
		if (q->ibv.qp_num == qp_num)
			break;
	pthread_mutex_unlock(&lock);
	return q ? &q->ibv : NULL;
}
