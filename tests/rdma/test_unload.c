/*
 * test_unload: uwarp's libibverbs and librdmacm stay mapped when the last
 * dlclose() lets go of them. An open device runs uwarp's progress thread
 * in them (and in libuwarp beneath), and a program may unload them while
 * it runs: Open MPI unloads its libfabric component, and with it both
 * libraries, in MPI_Finalize, and the thread then ran on unmapped code
 * (SIGSEGV). Run under uwarp-run; this program is linked against neither
 * library, so only dlopen holds them.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static int fails;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	fails += !ok;
}

static void *sym(void *lib, const char *name)
{
	void *f = dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(1);
	}
	return f;
}

int main(void)
{
	void *verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	void *cm = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!verbs || !cm) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	struct ibv_device **(*list)(int *) = sym(verbs, "ibv_get_device_list");
	struct ibv_context *(*open_dev)(struct ibv_device *) = sym(verbs, "ibv_open_device");
	const char *(*name)(struct ibv_device *) = sym(verbs, "ibv_get_device_name");
	int n = 0;
	struct ibv_device **devs = list(&n);
	check(devs && n == 1, "one device");
	if (!devs || n < 1)
		return 1;
	check(name(devs[0]) && !strcmp(name(devs[0]), "uwarp0"),
	      "it is uwarp0 (uwarp-run's library)");
	/* the device open, so the progress thread runs; and an id, so
	 * librdmacm's shared context is made too */
	struct ibv_context *ctx = open_dev(devs[0]);
	check(ctx != NULL, "ibv_open_device");
	struct rdma_event_channel *(*mkchan)(void) = sym(cm, "rdma_create_event_channel");
	struct rdma_event_channel *ch = mkchan();
	check(ch != NULL, "rdma_create_event_channel");
	int (*close_dev)(struct ibv_context *) = sym(verbs, "ibv_close_device");
	void (*free_list)(struct ibv_device **) = sym(verbs, "ibv_free_device_list");
	void (*rmchan)(struct rdma_event_channel *) = sym(cm, "rdma_destroy_event_channel");

	dlclose(cm);
	dlclose(verbs);
	check(dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL,
	      "librdmacm still mapped after its last dlclose");
	check(dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL,
	      "libibverbs still mapped after its last dlclose");
	check(dlopen("libuwarp.so.0", RTLD_NOW | RTLD_NOLOAD) != NULL,
	      "libuwarp still mapped after its last dlclose");
	if (!fails) { /* still mapped, so still callable: end what was made */
		rmchan(ch);
		close_dev(ctx);
		free_list(devs);
	}
	return fails != 0;
}
