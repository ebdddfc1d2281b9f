/*
 * list.h: the one list of uwarp, a circular doubly linked list threaded
 * through the objects it holds (no allocation to add or remove).
 *
 * A list head and the links in its entries are the same struct; an empty
 * list, and an entry on no list, point at themselves, so removing an entry
 * twice, or one never added, is harmless. Every queue in the project is
 * one: the runtime's connections and fired CQs, the ES-API's pending
 * operations (a FIFO whose head may be partly done), its sockets, their
 * graveyard and a listener's ready ones, esock's handshakes
 * in progress, uDAPL's objects of an interface adapter.
 */
#ifndef UWARP_UTIL_LIST_H
#define UWARP_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct util_list {
	struct util_list *prev, *next;
};

#define UTIL_LIST_INIT(name) { &(name), &(name) }

static inline void util_list_init(struct util_list *l) { l->prev = l->next = l; }

static inline bool util_list_empty(const struct util_list *l) { return l->next == l; }

static inline void util_list_add_tail(struct util_list *l, struct util_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void util_list_add_head(struct util_list *l, struct util_list *n)
{
	n->next = l->next;
	n->prev = l;
	l->next->prev = n;
	l->next = n;
}

static inline void util_list_del(struct util_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

/* every entry of @from moves to @to, which was empty; @from is empty then */
static inline void util_list_take_all(struct util_list *to, struct util_list *from)
{
	util_list_init(to);
	if (util_list_empty(from))
		return;
	to->next = from->next;
	to->prev = from->prev;
	to->next->prev = to;
	to->prev->next = to;
	util_list_init(from);
}

#define util_container_of(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

/* the first and last entries, or NULL when the list is empty */
#define util_list_first(l, type, member) \
	(util_list_empty(l) ? NULL : util_container_of((l)->next, type, member))
#define util_list_last(l, type, member) \
	(util_list_empty(l) ? NULL : util_container_of((l)->prev, type, member))
/* the entry after @e on list @l, or NULL at the end */
#define util_list_next(l, e, member)    \
	((e)->member.next == (l) ? NULL \
				 : util_container_of((e)->member.next, __typeof__(*(e)), member))

/* for (e = each entry of l, in order); the body must not remove e */
#define util_list_for_each(e, l, member)                                                        \
	for ((e) = util_container_of((l)->next, __typeof__(*(e)), member); &(e)->member != (l); \
	     (e) = util_container_of((e)->member.next, __typeof__(*(e)), member))

/* the same, where the body may remove (or free) e: n holds the next one */
#define util_list_for_each_safe(e, n, l, member)                                 \
	for ((e) = util_container_of((l)->next, __typeof__(*(e)), member),       \
	    (n) = util_container_of((e)->member.next, __typeof__(*(e)), member); \
	     &(e)->member != (l);                                                \
	     (e) = (n), (n) = util_container_of((n)->member.next, __typeof__(*(e)), member))

#endif
