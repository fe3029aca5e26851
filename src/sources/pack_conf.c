// SPDX-License-Identifier: BSD-2-Clause
/*
 * Pack files (docs/packs.md "The file format"): two sections, [pack] with
 * `key = value` lines and [probes] with `symbol = role options` lines.
 * Parsed by hand: the format is small, and every error must name its line.
 */
#include "sources/pack.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reqtrace/event.h>
#include <reqtrace/uprobe_args.h>

static const char *const role_names[] = {
	[RT_PACK_TOKENIZE] = "tokenize", [RT_PACK_DETOKENIZE] = "detokenize",
	[RT_PACK_DECODE] = "decode",	 [RT_PACK_SYNC] = "sync",
	[RT_PACK_SEQ_RM] = "seq_rm",	 [RT_PACK_REGION] = "region",
};

#define N_ROLES (int)(sizeof(role_names) / sizeof(role_names[0]))

int rt_pack_role_of(const char *name)
{
	int r;

	for (r = 1; r < N_ROLES; r++)
		if (role_names[r] && !strcmp(name, role_names[r]))
			return r;
	return 0;
}

const char *rt_pack_role_name(int role)
{
	return role > 0 && role < N_ROLES && role_names[role] ? role_names[role] : NULL;
}

struct parse {
	const char *file;
	int line;
	char *err;
	size_t err_len;
	struct rt_pack *p;
	unsigned seen; /* [pack] keys given, one bit each */
};

__attribute__((format(printf, 2, 3))) static int fail(struct parse *x, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(x->err, x->err_len, "%s:%d: %s", x->file, x->line, msg);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* a C identifier: what a symbol name is (no C++ mangling needs more) */
static bool is_ident(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* a name or version: letters, digits, '.', '_', '-' */
static bool is_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

/* a file glob: no '/', printable, no spaces */
static bool is_glob(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s == '/' || !isgraph((unsigned char)*s))
			return false;
	return true;
}

static int word_into(struct parse *x, const char *key, const char *v, char *dst)
{
	if (!is_word(v))
		return fail(x, "%s '%s': letters, digits, '.', '_' and '-' only", key, v);
	if (strlen(v) >= RT_PACK_NAME_LEN)
		return fail(x, "%s '%s': longer than %d characters", key, v, RT_PACK_NAME_LEN - 1);
	strcpy(dst, v);
	return 0;
}

/* A space-separated list into one of the pack's match lists. */
static int list_into(struct parse *x, const char *key, char *v, char (*dst)[RT_PACK_SYM_LEN],
		     uint32_t *n, bool glob)
{
	char *save = NULL, *t;

	for (t = strtok_r(v, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		uint32_t i;

		if (glob ? !is_glob(t) : !is_ident(t))
			return fail(x, "%s: '%s' is not a %s", key, t,
				    glob ? "file name pattern (no '/')" : "symbol name");
		if (strlen(t) >= RT_PACK_SYM_LEN)
			return fail(x, "%s: '%s' longer than %d characters", key, t,
				    RT_PACK_SYM_LEN - 1);
		for (i = 0; i < *n; i++)
			if (!strcmp(dst[i], t))
				return fail(x, "%s: '%s' listed twice", key, t);
		if (*n >= RT_PACK_MATCH_MAX)
			return fail(x, "%s: more than %d entries", key, RT_PACK_MATCH_MAX);
		strcpy(dst[(*n)++], t);
	}
	if (!*n)
		return fail(x, "%s: empty list", key);
	return 0;
}

enum { K_NAME, K_VERSION, K_ENGINE, K_FILES, K_SYMBOLS, K_WITHOUT, K__N };
static const char *const pack_keys[K__N] = { "name",  "version", "engine",
					     "files", "symbols", "without" };

static int pack_line(struct parse *x, const char *key, char *v)
{
	struct rt_pack *p = x->p;
	int k;

	for (k = 0; k < K__N; k++)
		if (!strcmp(key, pack_keys[k]))
			break;
	if (k == K__N)
		return fail(x,
			    "unknown key '%s' in [pack] (name, version, engine, files, "
			    "symbols, without)",
			    key);
	if (x->seen & (1u << k))
		return fail(x, "'%s' given twice", key);
	x->seen |= 1u << k;
	switch (k) {
	case K_NAME:
		return word_into(x, key, v, p->name);
	case K_VERSION:
		return word_into(x, key, v, p->version);
	case K_ENGINE:
		return word_into(x, key, v, p->engine);
	case K_FILES:
		return list_into(x, key, v, p->files, &p->n_files, true);
	case K_SYMBOLS:
		return list_into(x, key, v, p->symbols, &p->n_symbols, false);
	default:
		return list_into(x, key, v, p->without, &p->n_without, false);
	}
}

static int type_of(const char *s, size_t len, bool ret)
{
	static const char *const names[] = { "i32", "i64", "bool", "void" };
	int t;

	for (t = 0; t < 4; t++)
		if (strlen(names[t]) == len && !strncmp(s, names[t], len))
			break;
	if (t == 4 && len == 3 && !strncmp(s, "ptr", 3))
		t = RT_PACK_I64;
	if (t == RT_PACK_VOID && !ret)
		return -1;
	return t < 4 ? t : -1;
}

/* "args=2,3:i64,4": 1-based argument numbers, each with an optional type */
static int parse_args(struct parse *x, const char *sym, const char *v, struct rt_pack_probe *pr)
{
	const char *s = v;

	if (pr->n_args)
		return fail(x, "%s: args given twice", sym);
	while (*s) {
		char *end;
		long n;
		int t = RT_PACK_I32;

		if (!isdigit((unsigned char)*s))
			return fail(x, "%s: args '%s': argument numbers 1..%d, comma-separated",
				    sym, v, RT_ABI_ARG_MAX);
		errno = 0;
		n = strtol(s, &end, 10);
		if (errno || n < 1 || n > RT_ABI_ARG_MAX)
			return fail(x, "%s: args '%s': argument numbers 1..%d", sym, v,
				    RT_ABI_ARG_MAX);
		if (*end == ':') {
			size_t len = strcspn(end + 1, ",");

			t = type_of(end + 1, len, false);
			if (t < 0)
				return fail(x, "%s: args '%s': a type is i32, i64, ptr or bool",
					    sym, v);
			end += 1 + len;
		}
		if (pr->n_args >= RT_PACK_ARGS_MAX)
			return fail(x, "%s: more than %d args", sym, RT_PACK_ARGS_MAX);
		pr->arg_type[pr->n_args] = (uint8_t)t;
		pr->args[pr->n_args++] = (uint8_t)n;
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return fail(x, "%s: args '%s': argument numbers 1..%d, comma-separated",
				    sym, v, RT_ABI_ARG_MAX);
		s = end;
	}
	if (!pr->n_args)
		return fail(x, "%s: args= with no argument", sym);
	return 0;
}

static int probe_line(struct parse *x, const char *sym, char *v)
{
	struct rt_pack *p = x->p;
	struct rt_pack_probe *pr;
	char *save = NULL, *t;
	uint32_t i;
	int role;

	if (!is_ident(sym))
		return fail(x, "'%s' is not a symbol name", sym);
	if (strlen(sym) >= RT_PACK_SYM_LEN)
		return fail(x, "'%s' longer than %d characters", sym, RT_PACK_SYM_LEN - 1);
	for (i = 0; i < p->n_probes; i++)
		if (!strcmp(p->probes[i].sym, sym))
			return fail(x, "%s: probed twice", sym);
	if (p->n_probes >= RT_PACK_PROBES_MAX)
		return fail(x, "more than %d probes", RT_PACK_PROBES_MAX);
	pr = &p->probes[p->n_probes];
	memset(pr, 0, sizeof(*pr));
	strcpy(pr->sym, sym);
	t = strtok_r(v, " \t", &save);
	if (!t)
		return fail(x, "%s: no role (tokenize, detokenize, decode, sync, seq_rm, region)",
			    sym);
	role = rt_pack_role_of(t);
	if (!role)
		return fail(x,
			    "%s: unknown role '%s' (tokenize, detokenize, decode, sync, "
			    "seq_rm, region)",
			    sym, t);
	pr->role = (uint16_t)role;
	while ((t = strtok_r(NULL, " \t", &save))) {
		int err = 0;

		if (!strcmp(t, "return") || !strncmp(t, "return=", 7)) {
			int rt = t[6] ? type_of(t + 7, strlen(t + 7), true) : RT_PACK_I32;

			if (pr->ret)
				return fail(x, "%s: 'return' given twice", sym);
			if (rt < 0)
				return fail(
					x, "%s: '%s': a return type is i32, i64, ptr, bool or void",
					sym, t);
			pr->ret = true;
			pr->ret_type = (uint8_t)rt;
		} else if (!strcmp(t, "batch")) {
			if (role != RT_PACK_DECODE)
				return fail(
					x,
					"%s: 'batch' reads llama_decode's batch: role decode only",
					sym);
			if (pr->reader)
				return fail(x, "%s: 'batch' given twice", sym);
			pr->reader = RT_PACK_READER_LLAMA_BATCH;
		} else if (!strncmp(t, "args=", 5)) {
			err = parse_args(x, sym, t + 5, pr);
		} else if (!strncmp(t, "unless=", 7)) {
			if (pr->unless[0])
				return fail(x, "%s: unless= given twice", sym);
			if (!is_ident(t + 7) || strlen(t + 7) >= RT_PACK_SYM_LEN)
				return fail(x, "%s: unless '%s' is not a symbol name", sym, t + 7);
			if (!strcmp(t + 7, sym))
				return fail(x, "%s: unless= names the probe itself", sym);
			strcpy(pr->unless, t + 7);
		} else {
			return fail(x,
				    "%s: unknown option '%s' (return[=TYPE], batch, "
				    "args=N[:TYPE],..., unless=SYMBOL)",
				    sym, t);
		}
		if (err)
			return err;
	}
	p->n_probes++;
	return 0;
}

/* What only the whole file can tell. */
static int check_pack(struct parse *x)
{
	struct rt_pack *p = x->p;
	uint32_t i, j;

	if (!p->name[0])
		return fail(x, "[pack] has no name");
	if (!p->version[0])
		return fail(x, "[pack] has no version");
	if (!p->n_symbols)
		return fail(x, "[pack] has no symbols (the functions a file must carry)");
	if (!p->n_probes)
		return fail(x, "no [probes]");
	if (!p->engine[0])
		strcpy(p->engine, p->name);
	for (i = 0; i < p->n_without; i++) {
		for (j = 0; j < p->n_symbols; j++)
			if (!strcmp(p->without[i], p->symbols[j]))
				return fail(x, "'%s' is in both symbols and without",
					    p->without[i]);
		for (j = 0; j < p->n_probes; j++)
			if (!strcmp(p->without[i], p->probes[j].sym))
				return fail(x, "'%s' is probed but listed in without",
					    p->without[i]);
	}
	return 0;
}

int rt_pack_parse(const char *name, const char *text, struct rt_pack *p, char *err, size_t err_len)
{
	struct parse x = { .file = name, .err = err, .err_len = err_len, .p = p };
	enum { NONE, PACK, PROBES } sec = NONE;
	bool had_pack = false, had_probes = false;
	const char *s = text;
	char line[512];

	memset(p, 0, sizeof(*p));
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		char *l, *eq, *hash;
		int rc;

		x.line++;
		if (len >= sizeof(line))
			return fail(&x, "line longer than %zu characters", sizeof(line) - 1);
		memcpy(line, s, len);
		line[len] = '\0';
		s += len + (nl ? 1 : 0);
		if (memchr(line, '\0', len))
			return fail(&x, "a NUL byte: not a text file");
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		l = trim(line);
		if (!*l)
			continue;
		if (*l == '[') {
			if (!strcmp(l, "[pack]")) {
				if (had_pack)
					return fail(&x, "[pack] given twice");
				had_pack = true;
				sec = PACK;
			} else if (!strcmp(l, "[probes]")) {
				if (had_probes)
					return fail(&x, "[probes] given twice");
				had_probes = true;
				sec = PROBES;
			} else {
				return fail(&x, "unknown section '%s' ([pack], [probes])", l);
			}
			continue;
		}
		eq = strchr(l, '=');
		if (!eq)
			return fail(&x, "'%s': not 'key = value'", l);
		*eq = '\0';
		if (sec == NONE)
			return fail(&x, "'%s' outside a section", trim(l));
		if (sec == PROBES) {
			/* the options have '=' too: the first one ends the symbol */
			rc = probe_line(&x, trim(l), trim(eq + 1));
		} else {
			rc = pack_line(&x, trim(l), trim(eq + 1));
		}
		if (rc)
			return rc;
	}
	return check_pack(&x);
}

static int conf_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 5 && !strcmp(d->d_name + n - 5, ".conf");
}

static int read_text(const char *path, char **out)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;
	int err = 0;

	if (!f)
		return -errno;
	buf = malloc(RT_PACK_FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, RT_PACK_FILE_MAX + 1, f);
	if (ferror(f))
		err = -EIO;
	else if (n > RT_PACK_FILE_MAX)
		err = -EFBIG;
	fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	return (int)n;
}

int rt_packs_load_dir(const char *dir, struct rt_packs **out, char *err, size_t err_len)
{
	struct dirent **names = NULL;
	struct rt_packs *ps;
	int n, i, rc = 0;

	*out = NULL;
	n = scandir(dir, &names, conf_name, alphasort);
	if (n < 0) {
		rc = -errno;
		snprintf(err, err_len, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		rc = -ENOMEM;
		snprintf(err, err_len, "%s: out of memory", dir);
		goto cleanup;
	}
	if (n > RT_PACKS_MAX) {
		rc = -E2BIG;
		snprintf(err, err_len, "%s: more than %d packs", dir, RT_PACKS_MAX);
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		struct rt_pack *p = &ps->packs[ps->n];
		char path[512], *text = NULL;
		uint32_t j;
		int len;

		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) >=
		    sizeof(path)) {
			rc = -ENAMETOOLONG;
			snprintf(err, err_len, "%s/%s: path too long", dir, names[i]->d_name);
			goto cleanup;
		}
		len = read_text(path, &text);
		if (len < 0) {
			rc = len;
			snprintf(err, err_len, "%s: %s", path,
				 rc == -EFBIG ? "larger than 64 KiB" : strerror(-rc));
			goto cleanup;
		}
		if (strlen(text) != (size_t)len) {
			free(text);
			rc = -EINVAL;
			snprintf(err, err_len, "%s: a NUL byte: not a text file", path);
			goto cleanup;
		}
		rc = rt_pack_parse(path, text, p, err, err_len);
		free(text);
		if (rc)
			goto cleanup;
		for (j = 0; j < ps->n; j++)
			if (!strcmp(ps->packs[j].name, p->name)) {
				rc = -EINVAL;
				snprintf(err, err_len, "%s: pack '%s' already defined by %s", path,
					 p->name, ps->packs[j].path);
				goto cleanup;
			}
		snprintf(p->path, sizeof(p->path), "%s", path);
		ps->n++;
	}
cleanup:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc) {
		free(ps);
		return rc;
	}
	*out = ps;
	return 0;
}
