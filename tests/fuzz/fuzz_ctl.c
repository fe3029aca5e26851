// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for the control protocol's request parsing
 * (src/daemon/include/daemon/ctl_parse.h). The input is what a peer writes
 * to the control socket: it is cut into lines the way control.c's
 * process() does, and each line is parsed; a request that parses has its
 * duration members read the way the commands read them. Broken promises
 * abort().
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control.h"
#include "daemon/ctl_parse.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_ctl: broken promise: %s (line %d)\n", #cond,         \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void one_line(const char *line)
{
	static const char *const dur_keys[] = { "since", "duration", "v", "cmd" };
	struct rt_ctl_req req, again;
	char why[96];
	char *printed;
	uint64_t ns;
	int ret;

	memset(why, 0, sizeof(why));
	ret = rt_ctl_parse(line, &req, why, sizeof(why));
	if (ret) {
		CHECK(ret == -EINVAL || ret == -EPROTONOSUPPORT);
		CHECK(req.json == NULL && req.cmd == NULL);
		CHECK(why[0] != '\0' && memchr(why, '\0', sizeof(why)));
		return;
	}
	CHECK(cJSON_IsObject(req.json) && req.cmd != NULL);
	for (size_t i = 0; i < sizeof(dur_keys) / sizeof(dur_keys[0]); i++) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(req.json, dur_keys[i]);

		ret = rt_ctl_dur_field(req.json, dur_keys[i], &ns);
		CHECK(ret == 0 || ret == -EINVAL || ret == -ERANGE);
		CHECK(ret == 0 || ns == 0 || cJSON_IsString(item));
		/* a number past uint64_t has no conversion (UB, the first finding) */
		CHECK(!cJSON_IsNumber(item) || item->valuedouble < 18446744073709551616.0 ||
		      ret == -EINVAL);
	}
	/* what the daemon parsed, printed back, is the same request */
	printed = cJSON_PrintUnformatted(req.json);
	if (printed) {
		CHECK(rt_ctl_parse(printed, &again, why, sizeof(why)) == 0);
		CHECK(strcmp(again.cmd, req.cmd) == 0);
		cJSON_Delete(again.json);
		free(printed);
	}
	cJSON_Delete(req.json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;
	size_t pos = 0;

	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* as process(): complete lines only; a longer one ends the connection */
	while (pos < size) {
		char *nl = memchr(buf + pos, '\n', size - pos);

		if (!nl || (size_t)(nl - (buf + pos)) >= RT_CTL_LINE_MAX)
			break;
		*nl = '\0';
		one_line(buf + pos);
		pos = (size_t)(nl - buf) + 1;
	}
	free(buf);
	return 0;
}
