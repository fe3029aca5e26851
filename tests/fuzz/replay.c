// SPDX-License-Identifier: BSD-2-Clause
/*
 * main() of the replay builds of the parser harnesses (parsers.cmake):
 * runs LLVMFuzzerTestOneInput over every file named and every file in every
 * folder named, each from an exact-size heap copy so that ASan sees a read
 * past its end. Fails on an empty corpus, which would pass vacuously.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long size;
	int ret = -1;

	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto cleanup;
	buf = malloc(size ? (size_t)size : 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
		goto cleanup;
	LLVMFuzzerTestOneInput(buf, (size_t)size);
	ret = 0;
cleanup:
	if (ret)
		fprintf(stderr, "%s: cannot read\n", path);
	if (f)
		fclose(f);
	free(buf);
	return ret;
}

int main(int argc, char **argv)
{
	int files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat sb;
		struct dirent *de;
		DIR *d;

		if (stat(argv[i], &sb) == 0 && !S_ISDIR(sb.st_mode)) {
			if (run_file(argv[i]))
				return 1;
			files++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (run_file(path)) {
				closedir(d);
				return 1;
			}
			files++;
		}
		closedir(d);
	}
	printf("%s: replayed %d inputs\n", argv[0], files);
	return files > 0 ? 0 : 1;
}
