// SPDX-License-Identifier: BSD-2-Clause
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ULL
/* no scenario runs this long: a stuck simulation ends with an error */
#define GEN_TIME_LIMIT (20000 * MS)

size_t rt_gen_scenario_count(void)
{
	return gen_scenario_n();
}

const char *rt_gen_scenario_name(size_t i)
{
	const struct gen_scenario *sc = gen_scenario_at(i);

	return sc ? sc->name : NULL;
}

const char *rt_gen_scenario_desc(size_t i)
{
	const struct gen_scenario *sc = gen_scenario_at(i);

	return sc ? sc->desc : NULL;
}

const char *rt_gen_mode_name(enum rt_gen_mode mode)
{
	return mode == RT_GEN_MARKERS ? "markers" : mode == RT_GEN_PACK ? "pack" : "zero";
}

int rt_gen_mode_parse(const char *s, enum rt_gen_mode *mode)
{
	if (s && !strcmp(s, "zero")) {
		*mode = RT_GEN_ZERO;
		return 0;
	}
	if (s && !strcmp(s, "markers")) {
		*mode = RT_GEN_MARKERS;
		return 0;
	}
	if (s && !strcmp(s, "pack")) {
		*mode = RT_GEN_PACK;
		return 0;
	}
	return -EINVAL;
}

int rt_gen_run(const struct rt_gen_opts *opts)
{
	const struct gen_scenario *sc;
	struct gen_world *w;
	int err, i;

	if (!opts || !opts->rtrace_path || !opts->truth_path ||
	    (opts->mode != RT_GEN_ZERO && opts->mode != RT_GEN_MARKERS &&
	     opts->mode != RT_GEN_PACK))
		return -EINVAL;
	sc = gen_scenario_find(opts->scenario);
	if (!sc)
		return -ENOENT;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->sc = sc;
	w->mode = opts->mode;
	w->seed = opts->seed;
	w->t_start = RT_GEN_MONO_START;
	err = sim_init(&w->sim, w->t_start, opts->seed, GEN_PID);
	if (!err)
		err = gen_server_setup(w);
	if (!err)
		err = sim_run(&w->sim, w->t_start + GEN_TIME_LIMIT);
	if (!err && !w->sim.stopped)
		err = -ETIMEDOUT;
	if (!err) {
		sim_finish(&w->sim);
		err = gen_truth_write(w, opts->truth_path);
	}
	if (!err)
		err = gen_deliver(w, opts->rtrace_path);
	for (i = 0; i < GEN_MAX_CONNS; i++)
		free(w->conns[i].stream);
	free(w->pk_steps);
	sim_fini(&w->sim);
	free(w);
	return err;
}
