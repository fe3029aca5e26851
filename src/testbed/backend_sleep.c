// SPDX-License-Identifier: BSD-2-Clause
#include "backend.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "clock.h"

static int sleep_init(void **ctx, const struct tb_knobs *knobs)
{
	(void)knobs;
	*ctx = NULL;
	return 0;
}

static int sleep_step(void *ctx, const struct tb_step *step)
{
	(void)ctx;
	/* absolute deadline: an EINTR restart does not stretch the step */
	if (step->cost_ns)
		tb_sleep_until(tb_now_ns() + step->cost_ns);
	return 0;
}

static void sleep_fini(void *ctx)
{
	(void)ctx;
}

const struct tb_backend_ops tb_backend_sleep = {
	.name = "sleep",
	.init = sleep_init,
	.step = sleep_step,
	.fini = sleep_fini,
};

/* Backends a later build adds (CUDA) register here. */
static const struct tb_backend_ops *const backends[] = {
	&tb_backend_sleep,
	&tb_backend_cuda,
	&tb_backend_omp,
};

const struct tb_backend_ops *tb_backend_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	errno = ENOENT;
	return NULL;
}
