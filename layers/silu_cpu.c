/* silu_cpu.c — y = x sigmoid(x) and its derivative on plain pointers. */
#include "layers/silu.h"
#include "layers/add_math.h"
#include "layers/silu_math.h"

void _sf_silu_fwd(size_t n, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = sf_silu_f(x[i]);
}

void _sf_silu_bwd(size_t n, const float *x, const float *dy, float *dx, int acc)
{
	for (size_t i = 0; i < n; i++)
		sf_grad_store(&dx[i], sf_silu_d(x[i], dy[i]), acc);
}
