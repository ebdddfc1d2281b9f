/*
 * mpi_check: an MPI program written to the MPI standard only, run by
 * test_mpi.sh over Open MPI's libfabric transport on uwarp. It checks what
 * it receives, byte for byte:
 *   - ping-pong between ranks 0 and 1, 10 round trips at each of 1 B,
 *     64 B, 4 KiB, 64 KiB, 1 MiB and 4 MiB (eager, segmented and
 *     rendezvous sizes of libfabric's ofi_rxm), each direction with its own
 *     pattern, so a reply that is the request echoed fails;
 *   - MPI_Allreduce of every rank's rank + 1 (sum known);
 *   - MPI_Alltoall of 1024 ints per pair, each int naming sender, receiver
 *     and position.
 * Rank 0 prints "ok: N ranks, 0 errors" and every rank exits 0 only if no
 * rank saw an error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(int from, size_t i, int round)
{
	return (unsigned char)(from * 131 + i * 7 + (size_t)round * 13);
}

static void fill(unsigned char *b, size_t n, int from, int round)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(from, i, round);
}

/* 1 if b holds the pattern of rank from */
static int holds(const unsigned char *b, size_t n, int from, int round)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(from, i, round))
			return 0;
	return 1;
}

static int ping_pong(int rank)
{
	static const size_t sizes[] = { 1, 64, 4096, 65536, 1 << 20, 4 << 20 };
	unsigned char *buf = malloc(4 << 20);
	int bad = 0;
	if (!buf)
		return 1;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int n = (int)sizes[s];
		for (int round = 0; round < 10; round++) {
			if (rank == 0) {
				fill(buf, sizes[s], 0, round);
				MPI_Send(buf, n, MPI_BYTE, 1, round, MPI_COMM_WORLD);
				MPI_Recv(buf, n, MPI_BYTE, 1, round, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad += !holds(buf, sizes[s], 1, round);
			} else if (rank == 1) {
				MPI_Recv(buf, n, MPI_BYTE, 0, round, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad += !holds(buf, sizes[s], 0, round);
				fill(buf, sizes[s], 1, round);
				MPI_Send(buf, n, MPI_BYTE, 0, round, MPI_COMM_WORLD);
			}
		}
	}
	free(buf);
	return bad;
}

static int all_reduce(int size, int rank)
{
	long mine = rank + 1, sum = 0;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	return sum != (long)size * (size + 1) / 2;
}

static int all_to_all(int size, int rank)
{
	enum { N = 1024 };
	int *out = malloc(sizeof(int) * N * (size_t)size);
	int *in = malloc(sizeof(int) * N * (size_t)size);
	int bad = 0;
	if (!out || !in) {
		free(out);
		free(in);
		return 1;
	}
	for (int to = 0; to < size; to++)
		for (int i = 0; i < N; i++)
			out[to * N + i] = rank * 1000003 + to * N + i;
	MPI_Alltoall(out, N, MPI_INT, in, N, MPI_INT, MPI_COMM_WORLD);
	for (int from = 0; from < size && !bad; from++)
		for (int i = 0; i < N; i++)
			if (in[from * N + i] != from * 1000003 + rank * N + i) {
				bad = 1;
				break;
			}
	free(out);
	free(in);
	return bad;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int bad = size < 2;
	if (!bad)
		bad += ping_pong(rank);
	bad += all_reduce(size, rank);
	bad += all_to_all(size, rank);
	int total = 0;
	MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %d ranks, %d errors\n", total ? "FAIL" : "ok", size, total);
	MPI_Finalize();
	return total != 0;
}
