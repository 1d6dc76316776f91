/* mul_cpu.c — y = a * b and its gradients on plain pointers. */
#include "layers/mul.h"
#include "layers/add_math.h"

void _sf_mul_fwd(size_t n, const float *a, const float *b, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = a[i] * b[i];
}

void _sf_mul_bwd(size_t n, const float *other, const float *dy, float *d, int acc)
{
	for (size_t i = 0; i < n; i++)
		sf_grad_store(&d[i], dy[i] * other[i], acc);
}
