/*
 * mpi_check.h — TAP checks agreed over MPI ranks, for test programs run under mpirun
 * (tests/test_tensors.c, tests/test_infer.c): a check passes only if it passes on
 * every rank; rank 0 prints "ok N - ..." or "not ok N - ...", a failing rank says on
 * stderr which check and the library's last error. Set check_rank and check_prog
 * first; check_failed counts the failures (the program's exit status).
 */
#ifndef SF_TESTS_MPI_CHECK_H
#define SF_TESTS_MPI_CHECK_H

#include "shardflow.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>

static int check_rank, check_count, check_failed;
static const char *check_prog = "test";

static void check(bool good, const char *what)
{
	int mine = good, all = 0;
	MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	check_count++;
	check_failed += !all;
	if (check_rank == 0)
		printf("%sok %d - %s\n", all ? "" : "not ", check_count, what);
	if (!mine)
		fprintf(stderr, "%s: rank %d: check \"%s\" failed (last error: %s)\n", check_prog,
		        check_rank, what, sf_last_error());
}

#endif
