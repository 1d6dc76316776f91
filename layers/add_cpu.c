/* add_cpu.c — y = a + b and the pass-through of its gradient on plain pointers. */
#include "layers/add.h"
#include "layers/add_math.h"

#include <string.h>

void _sf_add_fwd(size_t n, const float *a, const float *b, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = sf_add_f(a[i], b[i]);
}

void _sf_pass_bwd(size_t n, const float *dy, float *d, int acc)
{
	if (!acc) {
		memcpy(d, dy, sizeof(float) * n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		sf_grad_store(&d[i], dy[i], 1);
}
