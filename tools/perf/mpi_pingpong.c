/*
 * mpi_pingpong: ranks 0 and 1 send a message back and forth; rank 0
 * prints one line per size: "SIZE BYTES LAT_US MBPS", the half round trip
 * and the bandwidth it implies (size / half round trip), the median of
 * the timed repetitions after a warm-up. Written to the MPI standard only,
 * so the same binary runs on any transport Open MPI is told to use
 * (tools/perf/mpi-bench runs it over uwarp and over plain TCP).
 *
 *   mpi_pingpong [SIZE...]      (default 8 65536 1048576)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* the median half round trip of reps round trips of n bytes, in seconds */
static double half_rtt(int rank, char *buf, int n, int reps)
{
	double *t = malloc(sizeof(double) * (size_t)reps);
	if (!t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = -reps / 10 - 1; i < reps; i++) {
		double t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
		if (i >= 0) /* the first tenth warms up */
			t[i] = (MPI_Wtime() - t0) / 2;
	}
	qsort(t, (size_t)reps, sizeof(double), cmp);
	double m = t[reps / 2];
	free(t);
	return m;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: run with 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	int def[] = { 8, 65536, 1 << 20 };
	int nsizes = argc > 1 ? argc - 1 : 3;
	for (int s = 0; s < nsizes; s++) {
		char *end;
		long n = argc > 1 ? strtol(argv[s + 1], &end, 10) : def[s];
		if (argc > 1 && (*end || n < 1 || n > (1 << 28))) {
			if (rank == 0)
				fprintf(stderr, "mpi_pingpong: bad size '%s' (1 to 268435456)\n",
					argv[s + 1]);
			MPI_Finalize();
			return 2;
		}
		char *buf = malloc((size_t)n);
		if (!buf)
			MPI_Abort(MPI_COMM_WORLD, 1);
		memset(buf, 0x5a, (size_t)n);
		int reps = n >= (1 << 20) ? 200 : n >= 65536 ? 1000 : 10000;
		double h = half_rtt(rank, buf, (int)n, reps);
		if (rank == 0)
			printf("SIZE %ld %.2f %.1f\n", n, h * 1e6, n / h / 1e6);
		free(buf);
	}
	MPI_Finalize();
	return 0;
}
