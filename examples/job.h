/*
 * job.h — a trainer's job file: JSON (jansson) whose sections mirror the trainer's
 * command line, read into the flags the command line would give.
 *
 *   {
 *     "preset": "gpt2",
 *     "model": {"layers": 12, "heads": 12, "embd": 768, "untied": false},
 *     "training": {"lr": 6e-4, "steps": 5000},
 *     "checkpoints": {"checkpoint-dir": "run1", "checkpoint-every": 500},
 *     "shardflow": {"prefetch_depth": 2, "SHARDFLOW_PARAM_DTYPE": "bf16"}
 *   }
 *
 * A key of a section is one of that section's options without its "--" (the
 * program's table says which option is in which section); a number or a string is its
 * value, true gives a flag and false leaves it out. "shardflow" holds SHARDFLOW_*
 * settings by their variable or knob name (sf_config_set's names; each is checked
 * here), set in the environment unless the environment already has that variable.
 * "layout" (what job_write_effective records: "dp 2 x tp 1") is read and ignored: the
 * launch and SHARDFLOW_TP decide a run's layout.
 * Precedence: the environment's SHARDFLOW_* over the file's; the command line's flags
 * over the file's (they come after them, and a later option wins). Header-only, for
 * examples/gpt.c (which the installed shardflow-train is); includes cli.h.
 */
#ifndef SF_EXAMPLES_JOB_H
#define SF_EXAMPLES_JOB_H

#include "examples/cli.h"

#include <jansson.h>

/* A job file's section: its name and its options ("--name"), in the usage's order */
struct job_section {
	const char *name;
	const char *const *options;
};

/* the value of a flag given in a job file */
static const char job_true[] = "";

/* Appends "--key" (and its value) to args; 0, or 2 with the message said. */
static int job_option(const char *path, const char *sec, const char *key, json_t *v,
                      const char *const *flags, int nflags, char **args, int *n)
{
	char name[96], num[64];
	snprintf(name, sizeof name, "--%s", key);
	int is_flag = 0;
	for (int j = 0; j < nflags; j++)
		is_flag |= !strcmp(flags[j], name);
	const char *val = NULL;
	if (json_is_boolean(v)) {
		if (!is_flag)
			return cli_bad_usage("%s: %s.%s is true or false, but --%s takes a value", path,
			                     sec, key, key);
		if (json_is_false(v))
			return 0;
		val = job_true;
	} else if (is_flag) {
		return cli_bad_usage("%s: %s.%s is a flag: true or false", path, sec, key);
	} else if (json_is_integer(v)) {
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		val = num;
	} else if (json_is_real(v)) {
		snprintf(num, sizeof num, "%.17g", json_real_value(v));
		val = num;
	} else if (json_is_string(v)) {
		val = json_string_value(v);
	} else {
		return cli_bad_usage("%s: %s.%s must be a number, a string or true/false", path, sec,
		                     key);
	}
	if (!(args[(*n)++] = strdup(name)))
		return cli_bad_usage("out of memory reading %s", path);
	if (val != job_true && !(args[(*n)++] = strdup(val)))
		return cli_bad_usage("out of memory reading %s", path);
	return 0;
}

/* "shardflow": each key a variable (SHARDFLOW_X) or knob name, checked by
 * sf_config_set; set unless the environment has it. 0, or 2 said. */
static int job_settings(const char *path, json_t *obj)
{
	struct sf_config c;
	if (sf_config_init(&c) != SF_OK)
		return cli_bad_usage("%s: cannot read the defaults", path);
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		char val[256], var[128];
		if (json_is_integer(v))
			snprintf(val, sizeof val, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else if (json_is_real(v))
			snprintf(val, sizeof val, "%.17g", json_real_value(v));
		else if (json_is_string(v))
			snprintf(val, sizeof val, "%s", json_string_value(v));
		else
			return cli_bad_usage("%s: shardflow.%s must be a number or a string", path, key);
		sf_log_set_quiet(1); /* the one line is this program's */
		int bad = sf_config_set(&c, key, val) != SF_OK;
		sf_log_set_quiet(0);
		if (bad) {
			const char *why = sf_last_error();
			if (!strncmp(why, "sf_config_set: ", 15))
				why += 15;
			return cli_bad_usage("%s: shardflow.%s: %s", path, key, why);
		}
		/* its variable (a knob's name or the variable's: sf_config_set took it) */
		snprintf(var, sizeof var, "%s", sf_config_variable(key));
		if (!val[0]) /* "" (trace): unset, the default; the variable would refuse it */
			continue;
		if (setenv(var, val, 0) != 0)
			return cli_bad_usage("%s: cannot set %s", path, var);
	}
	return 0;
}

/* The path of --job in argv ("--job F" or "--job=F"), or NULL. */
static const char *job_path(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--job") && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], "--job=", 6))
			return argv[i] + 6;
	}
	return NULL;
}

/* Reads job file `path` into *out_argv: argv[0], the file's options, then argv's own
 * (without --job), NULL-terminated; the file's "shardflow" settings go into the
 * environment. 0, or 2 with one message said (which file, which key, what is
 * accepted). The strings live until the program ends. */
static int job_load(const char *path, int argc, char **argv, const struct job_section *sections,
                    int nsections, const char *const *flags, int nflags, int *out_argc,
                    char ***out_argv)
{
	json_error_t err;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return cli_bad_usage("job file %s: %s (line %d, column %d)", path, err.text, err.line,
		                     err.column);
	int rc = 2, n = 0;
	size_t cap = (size_t)argc + 1 + 2 * 64;
	char **args = calloc(cap + 1, sizeof *args);
	if (!json_is_object(root)) {
		cli_bad_usage("job file %s: not a JSON object of sections", path);
		goto out;
	}
	if (!args) {
		cli_bad_usage("out of memory reading %s", path);
		goto out;
	}
	args[n++] = argv[0];
	const char *sec;
	json_t *body;
	json_object_foreach(root, sec, body)
	{
		if (!strcmp(sec, "shardflow")) {
			if (!json_is_object(body)) {
				cli_bad_usage("%s: \"shardflow\" must be an object of settings", path);
				goto out;
			}
			if (job_settings(path, body))
				goto out;
			continue;
		}
		if (!strcmp(sec, "layout")) /* an effective job's record of its world: the */
			continue;           /* launch decides the layout */
		if (!strcmp(sec, "preset") && json_is_string(body)) {
			args[n++] = strdup("--preset"), args[n++] = strdup(json_string_value(body));
			continue;
		}
		const struct job_section *s = NULL;
		for (int k = 0; k < nsections; k++)
			if (!strcmp(sections[k].name, sec))
				s = &sections[k];
		if (!s || !json_is_object(body)) {
			char list[512] = "preset (a string), shardflow";
			for (int k = 0; k < nsections; k++)
				snprintf(list + strlen(list), sizeof list - strlen(list), ", %s",
				         sections[k].name);
			cli_bad_usage("%s: \"%s\" is not a section (an object) of a job: the sections are "
			              "%s",
			              path, sec, list);
			goto out;
		}
		const char *key;
		json_t *v;
		json_object_foreach(body, key, v)
		{
			int known = 0;
			for (const char *const *o = s->options; *o; o++)
				known |= !strcmp(*o + 2, key);
			if (!known) {
				char list[1024] = "";
				for (const char *const *o = s->options; *o; o++)
					snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
					         o == s->options ? "" : ", ", *o + 2);
				cli_bad_usage("%s: %s.%s is not an option of section %s: its options are %s",
				              path, sec, key, sec, list);
				goto out;
			}
			if ((size_t)n + 2 > cap) {
				cli_bad_usage("%s: too many options", path);
				goto out;
			}
			if (job_option(path, sec, key, v, flags, nflags, args, &n))
				goto out;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--job")) {
			i++;
			continue;
		}
		if (!strncmp(argv[i], "--job=", 6))
			continue;
		args[n++] = argv[i];
	}
	args[n] = NULL;
	*out_argc = n;
	*out_argv = args;
	args = NULL;
	rc = 0;
out:
	free(args); /* on failure: the strdup'ed strings go with the process */
	json_decref(root);
	return rc;
}

/* Writes the run's effective job, JSON, to path whole or not at all
 * (sf_file_write_atomic): the options the run was given in sections (argv after job_load, the job
 * file's and the command line's), and every SHARDFLOW_* setting as the run has it
 * (sf_config_describe's words). 0 or -1 (errno). */
static int job_write_effective(const char *path, int argc, char **argv,
                               const struct job_section *sections, int nsections,
                               const char *const *flags, int nflags, const char *settings,
                               const char *layout)
{
	json_t *root = json_object(), *shard = json_object();
	if (!root || !shard)
		return -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2) != 0)
			continue;
		char name[96];
		const char *eq = strchr(a, '=');
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		const struct job_section *s = NULL;
		for (int k = 0; k < nsections && !s; k++)
			for (const char *const *o = sections[k].options; *o; o++)
				if (!strcmp(*o, name))
					s = &sections[k];
		if (!strcmp(name, "--preset") && i + 1 < argc) {
			json_object_set_new(root, "preset", json_string(eq ? eq + 1 : argv[++i]));
			continue;
		}
		if (!s)
			continue;
		json_t *sec = json_object_get(root, s->name);
		if (!sec)
			json_object_set_new(root, s->name, sec = json_object());
		int is_flag = 0;
		for (int j = 0; j < nflags; j++)
			is_flag |= !strcmp(flags[j], name);
		const char *val = eq ? eq + 1 : NULL;
		if (!is_flag && !val && i + 1 < argc)
			val = argv[++i];
		json_object_set_new(sec, name + 2, val ? json_string(val) : json_true());
	}
	/* "k=v k=v": each word a setting */
	const char *p = settings;
	while (p && *p) {
		size_t w = strcspn(p, " ");
		const char *eq = memchr(p, '=', w);
		if (eq) {
			char k[96];
			snprintf(k, sizeof k, "%.*s", (int)(eq - p), p);
			json_t *s = json_stringn(eq + 1, (size_t)(w - (size_t)(eq + 1 - p)));
			if (s)
				json_object_set_new(shard, k, s);
		}
		p += w;
		while (*p == ' ')
			p++;
	}
	json_object_set_new(root, "shardflow", shard);
	if (layout)
		json_object_set_new(root, "layout", json_string(layout));
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	sf_log_set_quiet(1); /* the caller says it, once */
	int rc = sf_file_write_atomic(path, text, strlen(text));
	sf_log_set_quiet(0);
	free(text);
	if (rc != SF_OK) {
		errno = EIO;
		return -1;
	}
	return 0;
}

#endif
