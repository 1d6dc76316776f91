/*
 * shardflow-run — mpirun that restarts a failed training job from its newest
 * checkpoint, as torchrun --max-restarts does:
 *
 *   shardflow-run --np 2 --max-restarts 3 -- examples/gpt --checkpoint-dir ck \
 *       --checkpoint-every 100
 *
 * Each run is `mpirun [-np N] [--mpirun-args words] PROGRAM ARGS...`; a run after a
 * failure adds --resume to the program's arguments, so that the examples (and any
 * program that takes --checkpoint-dir and --resume as they do) continue from the newest
 * complete checkpoint. What is loaded is the program's business: the launcher reads the
 * checkpoint directory only to say, in its log line, which step a restart resumes from
 * (and to wait for its lock, below).
 * Restarts need that directory, so --max-restarts above 0 without the program's
 * --checkpoint-dir is refused before anything runs; exit status 2 (the examples' bad
 * command line) is not retried, as a restart would repeat it.
 *
 * Before a restart the launcher waits, at most LEFTOVER_WAIT seconds, for what the
 * failed run left: the ranks of a killed mpirun run on until they notice, rank 0
 * holding the checkpoint directory's lock, and would have the restart refused. It is
 * a subreaper (Linux), so those ranks become its children; it waits until none is left
 * and the lock is free, then kills what is left (wait_for_leftovers).
 *
 * SIGINT, SIGTERM and SIGHUP stop the job for good: the first is passed on to mpirun,
 * which ends the ranks, and no restart follows. mpirun runs in a process group of its
 * own, so that a signal sent to the launcher's group (the terminal's Ctrl-C, timeout(1),
 * kill -- -PGID) reaches it once, through the launcher: Open MPI's mpirun takes a second
 * SIGINT or SIGTERM as "terminate at once" and exits without ending its ranks, which
 * would then run on beside the restarted job. For the same reason later signals are not
 * passed on. Out of the terminal's process group, mpirun would be stopped reading it:
 * its input is /dev/null when the launcher's is a terminal (training jobs read none).
 *
 * libc only (and the header-only tools/cli.h, the command line every program shares):
 * no MPI, no StarPU, nothing of the library; it runs wherever mpirun does.
 * Exit status: 0 when a run succeeds; the last run's status when it gives up (mpirun
 * reports a rank killed by signal S as 128 + S; mpirun itself killed by S also gives
 * 128 + S); 128 + S when stopped by signal S; 2 for a bad command line; 127 when
 * mpirun cannot be started.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "tools/cli.h"

extern char **environ;

#define PROG "shardflow-run"
enum { MAX_RESTARTS = 1000 };
static const double MAX_BACKOFF = 600.0;  /* seconds: the doubling stops there */
static const double LEFTOVER_WAIT = 30.0; /* seconds for a failed run's ranks to end */

static const char *const usage_text =
    "usage: " PROG " [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM under mpirun and, when the job fails (a non-zero exit, a rank killed),\n"
    "runs it again with --resume added to its arguments, up to --max-restarts times:\n"
    "PROGRAM continues from the newest checkpoint of its --checkpoint-dir DIR, which\n"
    "restarts need. A line on stderr says why each restart happens and from which step.\n"
    "Before a restart it waits, at most 30 s (then kills them, and waits as long again),\n"
    "for the failed run's processes to end and DIR's lock to be free.\n"
    "Exit status 2 (a bad command line) is not retried. SIGINT, SIGTERM and SIGHUP stop\n"
    "the job (passed on to mpirun), with no restart.\n"
    "\n"
    "options:\n"
    "  --np N, -np N       ranks, mpirun's -np (default: mpirun's, a rank per core)\n"
    "  --max-restarts N    restarts after failures, 0 to 1000 (default 0: run once)\n"
    "  --backoff S         seconds before the first restart, doubled before each next\n"
    "                      one, at most 600; 0 to 600, decimals allowed (default 1)\n"
    "  --mpirun-args WORDS more options for mpirun, split at blanks; may be repeated\n"
    "                      (e.g. --mpirun-args \"--bind-to none -x OMP_NUM_THREADS\")\n"
    "  --mpirun PATH       the mpirun to run (default: $MPIRUN, else mpirun)\n"
    "  --help              print this help and exit\n"
    "Options take \"--name value\" or \"--name=value\". Run as root, mpirun is given\n"
    "--allow-run-as-root (as in containers).\n"
    "\n"
    "Exit status: 0 when a run succeeds; the last run's when restarts are exhausted;\n"
    "128 + S when stopped by signal S; 2 for a bad command line; 127 when mpirun\n"
    "cannot be started.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

/* ---- the command line ------------------------------------------------------------- */

struct options {
	long np; /* 0: mpirun's default */
	long max_restarts;
	double backoff;
	const char *mpirun;
	char **mpirun_args; /* the words of every --mpirun-args, in order */
	size_t n_mpirun_args;
	char **prog; /* PROGRAM ARGS..., NULL-terminated (argv's tail) */
	int nprog;
	const char *ckpt_dir; /* the program's --checkpoint-dir, or NULL */
	bool has_resume;      /* the program's arguments hold --resume already */
};

/* A whole decimal integer in [lo, hi], digits only: 0, or 2 after a message naming
 * the option. */
static int parse_int(const char *opt, const char *s, long lo, long hi, long *out)
{
	int64_t v;
	if (strspn(s, "0123456789") != strlen(s) || cli_parse_i64(s, lo, hi, &v))
		return cli_bad_usage("%s \"%s\" is invalid: accepted values are integers from %ld "
		                     "to %ld",
		                     opt, s, lo, hi);
	*out = (long)v;
	return 0;
}

/* Seconds: a plain decimal number in [0, MAX_BACKOFF]: 0, or 2 after a message. */
static int parse_seconds(const char *opt, const char *s, double *out)
{
	if (strspn(s, "0123456789.") != strlen(s) || cli_parse_double(s, 0, MAX_BACKOFF, out))
		return cli_bad_usage("%s \"%s\" is invalid: accepted values are numbers of "
		                     "seconds from 0 to %.0f (e.g. 1, 0.5)",
		                     opt, s, MAX_BACKOFF);
	return 0;
}

/* Appends the blank-separated words of s to o->mpirun_args. */
static void add_mpirun_words(struct options *o, const char *s)
{
	char *copy = strdup(s);
	if (!copy) {
		fprintf(stderr, PROG ": out of memory\n");
		exit(1);
	}
	for (char *save = NULL, *w = strtok_r(copy, " \t\n", &save); w;
	     w = strtok_r(NULL, " \t\n", &save)) {
		char **grown = realloc(o->mpirun_args, (o->n_mpirun_args + 1) * sizeof *grown);
		if (!grown) {
			fprintf(stderr, PROG ": out of memory\n");
			exit(1);
		}
		o->mpirun_args = grown;
		o->mpirun_args[o->n_mpirun_args++] = w; /* lives as long as the process */
	}
}

/* A job file's (shardflow-train --job FILE, examples/job.h) "checkpoints" section:
 * its checkpoint-dir and resume, where the command line gives none. jansson reads it;
 * a file it cannot read is the program's to refuse, not ours. */
static void scan_job_file(struct options *o, const char *path)
{
	json_t *root = json_load_file(path, 0, NULL);
	json_t *sec = root ? json_object_get(root, "checkpoints") : NULL;
	json_t *dir = sec ? json_object_get(sec, "checkpoint-dir") : NULL;
	if (!o->ckpt_dir && json_is_string(dir) && *json_string_value(dir))
		o->ckpt_dir = strdup(json_string_value(dir)); /* lives as long as the process */
	if (sec && json_is_true(json_object_get(sec, "resume")))
		o->has_resume = true;
	json_decref(root);
}

/* The program's own --checkpoint-dir (the last one given) and --resume, on its
 * command line or, below it, in its job file (--job FILE). */
static void scan_program_args(struct options *o)
{
	const char *job = NULL;
	for (int i = 1; i < o->nprog; i++) {
		const char *a = o->prog[i];
		if (!strcmp(a, "--resume"))
			o->has_resume = true;
		else if (!strncmp(a, "--checkpoint-dir=", 17) && a[17])
			o->ckpt_dir = a + 17;
		else if (!strcmp(a, "--checkpoint-dir") && i + 1 < o->nprog)
			o->ckpt_dir = o->prog[++i];
		else if (!strncmp(a, "--job=", 6) && a[6])
			job = a + 6;
		else if (!strcmp(a, "--job") && i + 1 < o->nprog)
			job = o->prog[++i];
	}
	if (job)
		scan_job_file(o, job);
}

static const char *const option_names[] = {"--np",      "-np",      "--max-restarts",
                                           "--backoff", "--mpirun", "--mpirun-args"};

static int on_value(int k, char *v, void *ctx)
{
	struct options *o = ctx;
	switch (k) {
	case 0:
	case 1: return parse_int("--np", v, 1, 1000000, &o->np);
	case 2: return parse_int("--max-restarts", v, 0, MAX_RESTARTS, &o->max_restarts);
	case 3: return parse_seconds("--backoff", v, &o->backoff);
	case 4:
		if (!*v)
			return cli_bad_usage("--mpirun needs a program (a name or a path)");
		o->mpirun = v;
		return 0;
	default: add_mpirun_words(o, v); return 0;
	}
}

/* PROGRAM: it and its ARGS end the options (they are the program's) */
static int on_operand(char **argp, void *ctx)
{
	((struct options *)ctx)->prog = argp;
	return CLI_STOP;
}

/* The command line: 0, 1 (--help printed) or 2 (bad, said). */
static int parse_args(int argc, char **argv, struct options *o)
{
	const struct cli_spec sp = {option_names, 6, NULL, 0, on_value, NULL};
	cli_prog = PROG;
	cli_usage = usage;
	int rc = cli_parse_operands(argc, argv, &sp, on_operand, o);
	if (rc)
		return rc;
	if (!o->prog)
		return cli_bad_usage("no PROGRAM to run");
	o->nprog = (int)(argc - (o->prog - argv));
	scan_program_args(o);
	if (o->max_restarts > 0 && !o->ckpt_dir)
		return cli_bad_usage("--max-restarts %ld needs checkpoints to restart from, and %s "
		                     "has no --checkpoint-dir DIR: give it one (with "
		                     "--checkpoint-every K), or --max-restarts 0 to run once",
		                     o->max_restarts, o->prog[0]);
	return 0;
}

/* ---- signals ---------------------------------------------------------------------- */

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t stop_signal; /* the signal that stopped the job, or 0 */
static volatile sig_atomic_t passed_on;   /* ... and it was passed on to mpirun */
static volatile pid_t running;            /* mpirun while it runs, else 0 */

/* The first stop signal is passed on to mpirun, once (see the top of the file). */
static void on_stop(int sig)
{
	if (stop_signal)
		return;
	stop_signal = sig;
	if (running > 0) {
		kill(running, sig);
		passed_on = 1;
	}
}

static void install_handlers(sigset_t *stops)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sa.sa_flags = 0; /* no SA_RESTART: waits return EINTR and look at the flag */
	sigemptyset(&sa.sa_mask);
	sigemptyset(stops);
	for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
		struct sigaction old;
		/* a signal ignored when started (nohup) stays ignored, for mpirun too */
		if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaddset(&sa.sa_mask, stop_signals[i]);
		sigaddset(stops, stop_signals[i]);
	}
	for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
		if (sigismember(stops, stop_signals[i]))
			sigaction(stop_signals[i], &sa, NULL);
}

static const char *signal_name(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
	             {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
	             {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"},
	             {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
	             {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].sig == sig)
			return names[i].name;
	return "a signal";
}

/* ---- runs ------------------------------------------------------------------------- */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* "4.2 s", "12m05s", "3h02m10s" */
static void format_duration(double s, char *buf, size_t n)
{
	long t = (long)(s + 0.5);
	if (s < 60)
		snprintf(buf, n, "%.1f s", s);
	else if (t < 3600)
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
}

/* What a wait status says, and the exit status the launcher gives for it. */
static int describe_status(int status, char *buf, size_t n)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		snprintf(buf, n, "mpirun killed by signal %d (%s)", sig, signal_name(sig));
		return 128 + sig;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	if (code > 128 && code < 128 + 64)
		snprintf(buf, n,
		         "exit status %d (128 + %d, which mpirun gives when a rank is killed "
		         "by %s)",
		         code, code - 128, signal_name(code - 128));
	else
		snprintf(buf, n, "exit status %d", code);
	return code;
}

/* mpirun's command line for a run; restarts add --resume to the program's arguments. */
static char **command(const struct options *o, bool restart)
{
	size_t n = 0, cap = 8 + o->n_mpirun_args + (size_t)o->nprog;
	char **argv = calloc(cap, sizeof *argv);
	static char np[32];
	if (!argv)
		return NULL;
	argv[n++] = (char *)o->mpirun;
	bool allow_root = false;
	for (size_t i = 0; i < o->n_mpirun_args; i++)
		allow_root |= !strcmp(o->mpirun_args[i], "--allow-run-as-root");
	if (geteuid() == 0 && !allow_root)
		argv[n++] = "--allow-run-as-root";
	if (o->np > 0) {
		snprintf(np, sizeof np, "%ld", o->np);
		argv[n++] = "-np";
		argv[n++] = np;
	}
	for (size_t i = 0; i < o->n_mpirun_args; i++)
		argv[n++] = o->mpirun_args[i];
	for (int i = 0; i < o->nprog; i++)
		argv[n++] = o->prog[i];
	if (restart && !o->has_resume)
		argv[n++] = "--resume";
	argv[n] = NULL;
	return argv;
}

/* One run: starts mpirun in a process group of its own (input /dev/null instead of a
 * terminal) with the stop signals blocked, so that one arriving meanwhile is passed on
 * once `running` is set, and waits for it. Returns its wait status, or -1 when it
 * cannot be started (errno). */
static int run_once(char **argv, const sigset_t *stops)
{
	sigset_t old;
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status = -1, rc;
	sigprocmask(SIG_BLOCK, stops, &old);
	if (stop_signal) { /* stopped before this run began */
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = EINTR;
		return -1;
	}
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &old);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
	posix_spawn_file_actions_init(&fa);
	if (isatty(STDIN_FILENO))
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	fflush(NULL);
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc == 0)
		running = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			log_line("waiting for %s: %s", argv[0], strerror(errno));
			status = 1 << 8; /* exit status 1 */
			break;
		}
	}
	running = 0;
	return status;
}

/* Sleeps s seconds unless a stop signal comes first (pselect unblocks them only while
 * it waits, so none slips in between the check and the wait). Returns 0, or -1 when
 * stopped. */
static int backoff_sleep(double s, const sigset_t *stops)
{
	sigset_t old;
	double end = now() + s;
	int rc = 0;
	sigprocmask(SIG_BLOCK, stops, &old);
	for (;;) {
		if (stop_signal) {
			rc = -1;
			break;
		}
		double left = end - now();
		if (left <= 0)
			break;
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
		pselect(0, NULL, NULL, NULL, &ts, &old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* The step of a directory named step-<digits>, or with allow_staged step-<digits>.tmp
 * (a staging directory; *staged says which), or -1. */
static long long step_of(const char *name, bool allow_staged, bool *staged)
{
	size_t d = strncmp(name, "step-", 5) ? 0 : strspn(name + 5, "0123456789");
	*staged = d > 0 && !strcmp(name + 5 + d, ".tmp");
	if (d == 0 || d > 15 || (name[5 + d] && !(allow_staged && *staged)))
		return -1;
	return strtoll(name + 5, NULL, 10);
}

static bool has_manifest(const char *dir, const char *step)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s/manifest.json", dir, step);
	return stat(path, &st) == 0;
}

/* The newest complete checkpoint of dir (a step directory holding manifest.json): the
 * step dir/latest names, else the newest step-N (or staging step-N.tmp), as the
 * library's loader picks it (io/checkpoint_steps.c) unless it finds that step damaged.
 * Returns its step, or -1 when there is none; its path in buf. */
static long long newest_checkpoint(const char *dir, char *buf, size_t n)
{
	char path[4096], name[64] = "";
	bool staged;
	snprintf(path, sizeof path, "%s/latest", dir);
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(name, sizeof name, f))
			name[0] = '\0';
		fclose(f);
		name[strcspn(name, "\r\n")] = '\0';
		long long k = step_of(name, false, &staged);
		if (k >= 0 && has_manifest(dir, name)) {
			snprintf(buf, n, "%s/%s", dir, name);
			return k;
		}
	}
	long long best = -1;
	bool best_staged = false;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		long long k = step_of(e->d_name, true, &staged);
		/* step-N wins a tie with step-N.tmp */
		if (k < 0 || k < best || (k == best && (staged || !best_staged)) ||
		    !has_manifest(dir, e->d_name))
			continue;
		best = k;
		best_staged = staged;
		snprintf(buf, n, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	return best;
}

/* ---- what a failed run leaves behind -------------------------------------------------- */

/* The launcher's children, mpirun being gone: the launcher is a subreaper (Linux), so
 * ranks that outlive a killed mpirun become its children. Reaps those that ended;
 * returns how many are left, the first n of their pids in pids. */
static int leftovers(pid_t *pids, int n)
{
	int status, k = 0;
	while (waitpid(-1, &status, WNOHANG) > 0)
		;
	if (waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD)
		return 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 1; /* some, which only waitpid can tell */
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], line[512];
		if (!strspn(e->d_name, "0123456789"))
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		/* "pid (comm) state ppid ...": comm may hold blanks and parentheses */
		char *close_paren = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
		char state = 0;
		long ppid = 0;
		fclose(f);
		if (close_paren && sscanf(close_paren + 1, " %c %ld", &state, &ppid) == 2 &&
		    ppid == (long)getpid() && state != 'Z') {
			if (k < n)
				pids[k] = (pid_t)atol(e->d_name);
			k++;
		}
	}
	closedir(d);
	return k;
}

/* Whether a job holds dir/.lock (the flock io/checkpoint_lock.c takes): false when it
 * is free or absent; the holder as its record says ("pid P on HOST") in who. Taken and given back
 * at once. */
static bool lock_held(const char *dir, char *who, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/.lock", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	if (!held)
		flock(fd, LOCK_UN);
	char rec[256] = "", host[200] = "";
	long pid = 0;
	ssize_t got = held ? pread(fd, rec, sizeof rec - 1, 0) : 0;
	rec[got > 0 ? got : 0] = '\0';
	if (sscanf(rec, "%ld %199s", &pid, host) == 2)
		snprintf(who, n, "pid %ld on %s", pid, host);
	else
		snprintf(who, n, "a process");
	close(fd);
	return held;
}

/* "2 processes (pids 31 32) and the lock of ck (held by pid 31 on node1)" */
static void describe_leftovers(int k, const pid_t *pids, int n, bool held, const char *who,
                               const char *dir, char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	if (k > 0) {
		at += (size_t)snprintf(buf, size, "%d process%s (pid%s", k, k == 1 ? "" : "es",
		                       k == 1 ? "" : "s");
		for (int i = 0; i < k && i < n && at < size; i++)
			at += (size_t)snprintf(buf + at, size - at, " %ld", (long)pids[i]);
		if (at < size)
			at += (size_t)snprintf(buf + at, size - at, "%s)", k > n ? " ..." : "");
	}
	if (held && at < size)
		snprintf(buf + at, size - at, "%sthe lock of %s (held by %s)", k > 0 ? " and " : "",
		         dir, who);
}

/*
 * Before a restart: a failed run's ranks may outlive it (orphans of a killed mpirun run
 * on until they notice) and rank 0 still hold the checkpoint directory's lock, so that
 * the restart would be refused. Waits, at most LEFTOVER_WAIT seconds and saying so,
 * until the launcher has no child left and the lock is free; then kills the children
 * left (SIGKILL, as mpirun would have) and waits as long again. A lock held past that
 * (a rank of another machine, another job) is left to the restart to meet. Returns -1
 * when stopped by a signal.
 */
static int wait_for_leftovers(const char *dir, long run, const sigset_t *stops)
{
	enum { N = 8 };
	pid_t pids[N];
	char who[256], what[1024];
	double t0 = now(), until = t0 + LEFTOVER_WAIT;
	bool said = false, killed = false;
	for (;;) {
		int k = leftovers(pids, N);
		bool held = dir && lock_held(dir, who, sizeof who);
		if (k == 0 && !held) {
			if (said)
				log_line("run %ld's leftovers ended after %.1f s", run, now() - t0);
			return 0;
		}
		describe_leftovers(k, pids, N, held, who, dir, what, sizeof what);
		if (!said) {
			log_line("waiting up to %.0f s for what run %ld left to end: %s",
			         LEFTOVER_WAIT, run, what);
			said = true;
		}
		if (now() >= until) {
			if (k == 0 || killed) {
				log_line("%s still there after %.0f s; going on", what, now() - t0);
				return 0;
			}
			log_line("killing what run %ld left after %.0f s (SIGKILL): %s", run,
			         LEFTOVER_WAIT, what);
			for (int i = 0; i < k && i < N; i++)
				kill(pids[i], SIGKILL);
			killed = true;
			until = now() + LEFTOVER_WAIT;
		}
		if (backoff_sleep(0.02, stops) < 0)
			return -1;
	}
}

int main(int argc, char **argv)
{
	struct options o = {.backoff = 1.0};
	o.mpirun = getenv("MPIRUN") && *getenv("MPIRUN") ? getenv("MPIRUN") : "mpirun";
	int prc = parse_args(argc, argv, &o);
	if (prc)
		return prc == 1 ? 0 : prc;

	sigset_t stops;
	install_handlers(&stops);
#ifdef __linux__
	/* a killed mpirun's ranks become the launcher's children (wait_for_leftovers) */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
	double start = now(), wait_s = o.backoff;
	char why[160], took[32], where[4096 + 64];
	for (long restarts = 0;; restarts++) {
		char **cmd = command(&o, restarts > 0);
		if (!cmd) {
			fprintf(stderr, PROG ": out of memory\n");
			return 1;
		}
		double t0 = now();
		int status = run_once(cmd, &stops), err = errno;
		free(cmd);
		if (status < 0 && err != EINTR) {
			log_line("cannot run %s: %s (install Open MPI's mpirun, or name one with "
			         "--mpirun PATH or MPIRUN)",
			         o.mpirun, strerror(err));
			return 127;
		}
		format_duration(now() - t0, took, sizeof took);
		int code = status < 0 ? 1 : describe_status(status, why, sizeof why);
		if (stop_signal) {
			int sig = stop_signal;
			if (status < 0)
				log_line("stopped by %s before run %ld began; no restart",
				         signal_name(sig), restarts + 1);
			else
				log_line("stopped by %s (%s) during run %ld: mpirun ended after %s "
				         "with %s; "
				         "no restart",
				         signal_name(sig),
				         passed_on ? "passed on to mpirun" : "mpirun had ended",
				         restarts + 1, took, why);
			return 128 + sig;
		}
		if (code == 0) {
			if (restarts > 0) {
				format_duration(now() - start, took, sizeof took);
				log_line("the job finished after %ld restart%s (%ld runs, %s)",
				         restarts, restarts == 1 ? "" : "s", restarts + 1, took);
			}
			return 0;
		}
		if (code == 2) {
			log_line("not restarting: run %ld ended after %s with exit status 2, a bad "
			         "command line%s, which a restart would repeat",
			         restarts + 1, took,
			         restarts > 0 && !o.has_resume
			             ? " (does the program take --resume?)"
			             : "");
			return 2;
		}
		if (restarts >= o.max_restarts) {
			log_line(
			    "giving up after %ld restart%s (--max-restarts %ld): run %ld ended "
			    "after %s with %s; exit status %d",
			    restarts, restarts == 1 ? "" : "s", o.max_restarts, restarts + 1, took,
			    why, code);
			return code;
		}
		if (wait_for_leftovers(o.ckpt_dir, restarts + 1, &stops) < 0) {
			log_line("stopped by %s while waiting to restart; no restart",
			         signal_name(stop_signal));
			return 128 + stop_signal;
		}
		/* read after the wait: leftover ranks may have saved a later step meanwhile */
		long long step = newest_checkpoint(o.ckpt_dir, where, sizeof where);
		char from[4096 + 128];
		if (step >= 0)
			snprintf(from, sizeof from, "resuming from step %lld (%s)", step, where);
		else
			snprintf(from, sizeof from,
			         "no checkpoint in %s yet: starting afresh (with --resume)",
			         o.ckpt_dir);
		log_line("restart %ld of %ld in %g s: run %ld ended after %s with %s; %s",
		         restarts + 1, o.max_restarts, wait_s, restarts + 1, took, why, from);
		if (backoff_sleep(wait_s, &stops) < 0) {
			log_line("stopped by %s while waiting to restart; no restart",
			         signal_name(stop_signal));
			return 128 + stop_signal;
		}
		wait_s = wait_s * 2 > MAX_BACKOFF ? MAX_BACKOFF : wait_s * 2;
	}
}
