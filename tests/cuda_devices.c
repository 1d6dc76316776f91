/*
 * cuda_devices.c — prints how many CUDA devices cudaGetDeviceCount finds (0 when it
 * fails: no driver, no device), for the tests that need a GPU (tests/gpu_step.sh)
 * and scripts/gpu-selftest.sh. Built only when configure found CUDA.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		printf("0\n");
		fprintf(stderr, "cuda_devices: cudaGetDeviceCount: %s\n", cudaGetErrorString(e));
		return 0;
	}
	printf("%d\n", n);
	return 0;
}
