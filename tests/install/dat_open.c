/*
 * dat_open.c: a uDAPL program against Debian's DAT registry (libdat2),
 * which test_install.sh runs with DAT_OVERRIDE naming the dat.conf that
 * uwarp installs: the registry lists the provider "uwarp", loads the
 * installed library and opens an interface adapter on it. Prints
 * "dat: ..." and exits 0, or 1 with what failed.
 */
#include <dat2/udat.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	DAT_PROVIDER_INFO info[8], *list[8];
	DAT_COUNT n = 0;
	for (int i = 0; i < 8; i++)
		list[i] = &info[i];
	DAT_RETURN rc = dat_registry_list_providers(8, &n, list);
	int listed = 0;
	for (DAT_COUNT i = 0; rc == DAT_SUCCESS && i < n; i++)
		listed |= !strcmp(info[i].ia_name, "uwarp");
	if (!listed) {
		fprintf(stderr, "dat_open: the registry does not list uwarp (%#x, %d providers)\n",
			rc, n);
		return 1;
	}
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	rc = dat_ia_open("uwarp", 8, &async, &ia);
	if (rc != DAT_SUCCESS) {
		fprintf(stderr, "dat_open: dat_ia_open(uwarp): %#x\n", rc);
		return 1;
	}
	DAT_IA_ATTR attr;
	DAT_PROVIDER_ATTR pattr;
	rc = dat_ia_query(ia, &async, DAT_IA_ALL, &attr, DAT_PROVIDER_FIELD_ALL, &pattr);
	if (rc != DAT_SUCCESS) {
		fprintf(stderr, "dat_open: dat_ia_query: %#x\n", rc);
		return 1;
	}
	printf("dat: opened %s (%s)\n", attr.adapter_name, pattr.provider_name);
	dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return 0;
}
