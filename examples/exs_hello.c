/* exs_hello: a socket made the usual way, written to with the ES-API: the
 * send returns at once, and its completion comes through an event queue. */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/exs.h>

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	if (argc != 3 || getaddrinfo(argv[1], argv[2], &hints, &ai))
		return fprintf(stderr, "usage: exs_hello HOST PORT\n"), 2;
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		return perror("connect"), 1;
	if (exs_init(EXS_VERSION) == -1)
		return perror("exs_init"), 1;
	exs_qhandle_t q = exs_qcreate(4);
	static char msg[] = "hello through the ES-API\n";
	exs_mhandle_t mh = exs_mregister(msg, strlen(msg), 0);
	exs_event_t ev;
	if (exs_send(fd, msg, strlen(msg), 0, q, (exs_ahandle_t)1, mh) ||
	    exs_qdequeue(q, &ev, -1, NULL) != 1)
		return perror("exs_send"), 1;
	if (ev.exs_evt_errno)
		return fprintf(stderr, "send: %s\n", strerror(ev.exs_evt_errno)), 1;
	printf("sent %zd bytes\n", ev.exs_evt_union.xfer.bytes);
	exs_mderegister(&mh);
	return exs_close(fd, EXS_QHANDLE_INVALID, NULL) ? perror("exs_close"), 1 : 0;
}
