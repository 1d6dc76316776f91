/*
 * cuda_devices.c — prints how many CUDA devices cudaGetDeviceCount finds (0 when it
 * fails: no driver, no device), for the tests that need a GPU (tests/gpu_step.sh)
 * and scripts/gpu-check.sh. Built only when configure found CUDA.
 *
 *   cuda_devices        the count
 *   cuda_devices -v     the count, then the driver's and the runtime's CUDA versions
 *                       and, for each device, its name, compute capability, memory,
 *                       SM count, compute mode and PCI bus id (scripts/gpu-check.sh's
 *                       probe)
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

static const char *mode_name(int m)
{
	switch (m) {
	case cudaComputeModeDefault: return "default";
	case cudaComputeModeProhibited: return "prohibited";
	case cudaComputeModeExclusiveProcess: return "exclusive-process";
	default: return "unknown";
	}
}

static void versions(void)
{
	int drv = 0, rt = 0;
	cudaError_t e1 = cudaDriverGetVersion(&drv), e2 = cudaRuntimeGetVersion(&rt);
	if (e1 == cudaSuccess)
		printf("driver CUDA %d.%d\n", drv / 1000, drv % 1000 / 10);
	else
		printf("driver CUDA unknown (%s)\n", cudaGetErrorString(e1));
	if (e2 == cudaSuccess)
		printf("runtime CUDA %d.%d\n", rt / 1000, rt % 1000 / 10);
	else
		printf("runtime CUDA unknown (%s)\n", cudaGetErrorString(e2));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cuda_devices [-v]\n");
}

static const char *const flag_names[] = {"-v"};

static int on_flag(int j, void *ctx)
{
	(void)j;
	*(int *)ctx = 1;
	return 0;
}

int main(int argc, char **argv)
{
	int verbose = 0;
	const struct cli_spec sp = {NULL, 0, flag_names, 1, NULL, on_flag};
	cli_prog = "cuda_devices";
	cli_usage = usage;
	int prc = cli_parse(argc, argv, &sp, &verbose);
	if (prc)
		return prc == 1 ? 0 : prc;
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		printf("0\n");
		fprintf(stderr, "cuda_devices: cudaGetDeviceCount: %s\n", cudaGetErrorString(e));
		if (verbose)
			versions();
		return 0;
	}
	printf("%d\n", n);
	if (!verbose)
		return 0;
	versions();
	for (int d = 0; d < n; d++) {
		struct cudaDeviceProp p;
		int mode = -1, cc_major = 0, cc_minor = 0, sms = 0;
		char bus[32] = "?";
		if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
			printf("device %d: cudaGetDeviceProperties: %s\n", d,
			       cudaGetErrorString(cudaGetLastError()));
			continue;
		}
		(void)cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d);
		(void)cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, d);
		(void)cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, d);
		(void)cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d);
		(void)cudaDeviceGetPCIBusId(bus, (int)sizeof bus, d);
		printf("device %d: %s, sm_%d%d, %.1f GiB, %d SMs, compute mode %s, PCI %s\n", d, p.name,
		       cc_major, cc_minor, (double)p.totalGlobalMem / (1024.0 * 1024 * 1024), sms,
		       mode_name(mode), bus);
	}
	return 0;
}
