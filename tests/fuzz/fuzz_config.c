// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for reqtraced's config file parser (src/daemon/config.h,
 * rt_config_parse_string()). The input is the file's text. A file that
 * parses must give options, and merging it over the defaults must give
 * the same configuration (rt_config_diff() finds nothing); a file that
 * does not must say where. Broken promises abort().
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_config: broken promise: %s (line %d)\n", #cond,      \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_config c, merged;
	struct rt_daemon_opts o;
	char err[256];
	char *text;
	int ret;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	rt_config_init(&c);
	memset(err, 0x55, sizeof(err));
	ret = rt_config_parse_string(&c, "fuzz.conf", text, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL);
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		CHECK(strncmp(err, "fuzz.conf:", 10) == 0);
	} else {
		rt_config_opts(&c, &o);
		rt_config_init(&merged);
		CHECK(rt_config_merge(&merged, &c) == 0);
		CHECK(rt_config_diff(&merged, &c) == 0);
		rt_config_fini(&merged);
	}
	rt_config_fini(&c);
	free(text);
	return 0;
}
