/* relu_cpu.c — y = max(x, 0) and its derivative on plain pointers. */
#include "layers/relu.h"
#include "layers/add_math.h"
#include "layers/relu_math.h"

void _sf_relu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = sf_relu_f(x[i]);
}

void _sf_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++)
		sf_grad_store(&dx[i], sf_relu_d(x[i], dy[i]), acc);
}
