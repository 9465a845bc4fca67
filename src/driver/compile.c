/* Running the compiler on a generated source: argv without a shell, parts in parallel within a CPU and memory cap, output to robot.build.log. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "build_internal.h"

#define LOG_TAIL_LINES 20
#define GRID_MAX_PARTS 16  /* most translation units a source splits into */
#define GRID_MAX_ARGS 128  /* words in one compiler command */

/* append a word quoted for a POSIX shell, so the logged command can be pasted */
static void put_shell_word(grid_buf *b, const char *w)
{
    if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+./,:@%") == strlen(w)) {
        grid_buf_puts(b, w);
        return;
    }
    grid_buf_put(b, "'", 1);
    for (; *w; w++) {
        if (*w == '\'') grid_buf_puts(b, "'\\''");
        else grid_buf_put(b, w, 1);
    }
    grid_buf_put(b, "'", 1);
}

/* the last LOG_TAIL_LINES lines of the log, cut from the front to fit cap bytes */
static void log_tail(const char *log, char *out, size_t cap)
{
    out[0] = '\0';
    char *text = NULL;
    size_t len = 0;
    if (grid_fs_read(log, &text, &len) != 0) return;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
    size_t start = len;
    int lines = 0;
    while (start > 0) {
        if (text[start - 1] == '\n' && ++lines == LOG_TAIL_LINES) break;
        start--;
    }
    if (len - start >= cap) start = len - (cap - 1);
    snprintf(out, cap, "%.*s", (int)(len - start), text + start);
    free(text);
}

/* the part count the emitter writes on the source's first line (grid-rbd parts: N), 1 if absent */
static int source_parts(const char *dir, const char *source_name)
{
    char path[GRID_PATH_CAP], head[64] = {0};
    if (grid_pathf(path, sizeof path, "%s/%s", dir, source_name) != 0) return 1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    int parts = 1;
    if (n > 0 && sscanf(head, "/* grid-rbd parts: %d */", &parts) != 1) parts = 1;
    return parts < 1 ? 1 : parts > GRID_MAX_PARTS ? GRID_MAX_PARTS : parts;
}

/* argv of one step, derived from the single-command argv: a part compile
   (-shared -> -c, robot.so -> part<k>.o, -DGRID_PART=k, no libraries) or the link (source -> objects) */
typedef struct {
    char *argv[GRID_MAX_ARGS];
    char words[GRID_MAX_PARTS + 1][32];
} step_argv;

static int make_step(const grid_toolchain *tc, int part, int parts, step_argv *s)
{
    int k = 0, after_source = 0;
    for (int i = 0; i < tc->argc && k < GRID_MAX_ARGS - GRID_MAX_PARTS - 2; i++) {
        const char *a = tc->argv[i];
        if (after_source && part >= 0) break; /* libraries: link step only */
        if (part >= 0 && strcmp(a, "-shared") == 0) {
            s->argv[k++] = "-c";
        } else if (part >= 0 && i > 0 && strcmp(tc->argv[i - 1], "-o") == 0) {
            snprintf(s->words[0], sizeof s->words[0], "part%d.o", part);
            s->argv[k++] = s->words[0];
        } else if (strcmp(a, tc->source_name) == 0) {
            after_source = 1;
            if (part >= 0) {
                s->argv[k++] = (char *)a;
                snprintf(s->words[1], sizeof s->words[1], "-DGRID_PART=%d", part + 1); /* parts count from 1 */
                s->argv[k++] = s->words[1];
            } else {
                for (int p = 0; p < parts; p++) {
                    snprintf(s->words[p + 1], sizeof s->words[p + 1], "part%d.o", p);
                    s->argv[k++] = s->words[p + 1];
                }
            }
        } else {
            s->argv[k++] = (char *)a;
        }
    }
    s->argv[k] = NULL;
    return k;
}

/* the command of a step as the log shows it, written just before the step starts */
static void note_command(grid_buf *note, char *const argv[], const char *what)
{
    grid_buf_puts(note, "# ");
    grid_buf_puts(note, what);
    grid_buf_puts(note, " (run in the entry directory):\n# ");
    for (int i = 0; argv[i]; i++) {
        if (i) grid_buf_put(note, " ", 1);
        put_shell_word(note, argv[i]);
    }
    grid_buf_puts(note, "\n");
}

/* first number after `key` in a file (e.g. "MemAvailable:" in /proc/meminfo); -1 when absent */
static long long file_number(const char *path, const char *key)
{
    char *text = NULL;
    size_t len = 0;
    long long v = -1;
    if (grid_fs_read(path, &text, &len) != 0) return -1;
    const char *p = key ? strstr(text, key) : text;
    if (p) {
        p += key ? strlen(key) : 0;
        while (*p == ' ' || *p == '\t') p++;
        if (*p >= '0' && *p <= '9') v = strtoll(p, NULL, 10);
    }
    free(text);
    return v;
}

/* bytes of memory a build can use: MemAvailable, and under a cgroup v2 limit what is left of it; -1 unknown */
static long long usable_memory(void)
{
    long long avail = file_number("/proc/meminfo", "MemAvailable:");
    if (avail >= 0) avail *= 1024;
    char *text = NULL;
    size_t len = 0;
    if (grid_fs_read("/proc/self/cgroup", &text, &len) == 0) {
        const char *p = strstr(text, "0::");
        if (p) {
            p += 3;
            int n = (int)strcspn(p, "\n");
            char max_path[GRID_PATH_CAP], cur_path[GRID_PATH_CAP];
            if (grid_pathf(max_path, sizeof max_path, "/sys/fs/cgroup%.*s/memory.max", n, p) == 0 &&
                grid_pathf(cur_path, sizeof cur_path, "/sys/fs/cgroup%.*s/memory.current", n, p) == 0) {
                long long max = file_number(max_path, NULL), cur = file_number(cur_path, NULL);
                if (max > 0 && cur >= 0) {
                    long long left = max > cur ? max - cur : 0;
                    if (avail < 0 || left < avail) avail = left;
                }
            }
        }
        free(text);
    }
    return avail;
}

int grid_build_jobs(int parts)
{
    if (parts < 1) parts = 1;
    /* the knob is validated with the toolchain, before anything is built (a bad value never gets here) */
    int env = 0;
    grid_error ignored;
    if (grid_env_build_jobs(&env, &ignored) == GRID_OK && env > 0) return env < parts ? env : parts;
    int jobs = parts;
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && cpus < jobs) jobs = (int)cpus;
    long long mem = usable_memory();
    if (mem >= 0 && mem / GRID_BUILD_JOB_BYTES < jobs) jobs = (int)(mem / GRID_BUILD_JOB_BYTES);
    return jobs < 1 ? 1 : jobs;
}

int grid_compile(const grid_toolchain *tc, const char *dir, const char *failed_log, double *seconds,
                 grid_cancel_fn cancel, void *cancel_ctx, grid_error *err)
{
    char log[GRID_PATH_CAP];
    if (grid_pathf(log, sizeof log, "%s/robot.build.log", dir) != 0)
        return grid_cache_error(err, "write build log in", dir, ENAMETOOLONG);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return grid_cache_error(err, "create build log", log, errno);

    /* one command, or the parts (at most `jobs` at a time) and then the link */
    int parts = source_parts(dir, tc->source_name);
    int nsteps = parts == 1 ? 1 : parts + 1;
    step_argv *steps = calloc((size_t)nsteps, sizeof *steps);
    grid_step *job_steps = calloc((size_t)nsteps, sizeof *job_steps);
    grid_buf *notes = calloc((size_t)nsteps, sizeof *notes);
    if (!steps || !job_steps || !notes) {
        free(steps);
        free(job_steps);
        free(notes);
        close(fd);
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory preparing the compile");
    }
    grid_job job;
    memset(&job, 0, sizeof job);
    if (parts == 1) {
        for (int i = 0; i < tc->argc && i < GRID_MAX_ARGS - 1; i++) steps[0].argv[i] = tc->argv[i];
        job.nstages = 1;
        job.stage_len[0] = 1;
    } else {
        for (int p = 0; p < parts; p++) make_step(tc, p, parts, &steps[p]);
        make_step(tc, -1, parts, &steps[parts]);
        job.nstages = 2;
        job.stage_len[0] = parts;
        job.stage_len[1] = 1;
    }
    int oom = 0;
    for (int i = 0; i < nsteps; i++) {
        grid_buf_init(&notes[i]);
        note_command(&notes[i], steps[i].argv, parts > 1 && i < parts ? "grid-rbd build log; part command"
                                                                       : "grid-rbd build log; command");
        oom |= notes[i].oom;
        job_steps[i].argv = steps[i].argv;
        job_steps[i].note = notes[i].data;
    }
    job.steps = job_steps;
    job.jobs = grid_build_jobs(parts);
    job.cwd = dir;
    job.out_fd = fd;
    job.cancel = cancel;
    job.cancel_ctx = cancel_ctx;
    double t0 = grid_now();
    grid_job_result jr;
    memset(&jr, 0, sizeof jr);
    int rc = oom ? ENOMEM : grid_run_job(&job, &jr);
    if (!rc) rc = jr.start_errno;
    int status = jr.status;
    for (int i = 0; i < nsteps; i++) grid_buf_free(&notes[i]);
    free(notes);
    free(job_steps);
    free(steps);
    double dt = grid_now() - t0;
    if (seconds) *seconds = dt;

    /* the footer: how it ended */
    char foot[128];
    int n;
    if (jr.cancelled) n = snprintf(foot, sizeof foot, "# cancelled after %.2f s: the compilers were stopped\n", dt);
    else if (rc) n = snprintf(foot, sizeof foot, "# could not start the compiler: %s\n", strerror(rc));
    else if (WIFEXITED(status)) n = snprintf(foot, sizeof foot, "# exit status %d after %.2f s\n", WEXITSTATUS(status), dt);
    else n = snprintf(foot, sizeof foot, "# killed by signal %d after %.2f s\n", WTERMSIG(status), dt);
    (void)!write(fd, foot, (size_t)n);
    close(fd);

    if (jr.cancelled)
        return grid_error_set(err, GRID_ERR_CANCELLED, 0, 0, "compiling robot.so was cancelled; the compilers were stopped");
    if (rc)
        return grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                              "could not run the compiler '%s': %s; set %s to a working compiler",
                              tc->compiler, strerror(rc), tc->target == GRID_TARGET_CUDA ? "GRID_RBD_NVCC" : "GRID_RBD_CC");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        if (access(log, F_OK) == 0) {
            char so[GRID_PATH_CAP];
            grid_pathf(so, sizeof so, "%s/robot.so", dir);
            if (access(so, R_OK) == 0) return GRID_OK;
        }
        return grid_error_set(err, GRID_ERR_BUILD, 0, 0, "the compiler '%s' exited with status 0 but wrote no robot.so",
                              tc->compiler);
    }

    /* failure: keep the log where the user can read it, report its tail */
    if (failed_log) grid_fs_copy(log, failed_log);
    char how[64];
    if (WIFEXITED(status)) snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
    else snprintf(how, sizeof how, "signal %d", WTERMSIG(status));
    char head_msg[512];
    int hn = snprintf(head_msg, sizeof head_msg, "compiling robot.so with %s failed (%s); full log: %s; last lines:\n",
                      tc->display, how, failed_log ? failed_log : log);
    if (hn < 0) hn = 0;
    if (hn > (int)sizeof head_msg - 1) hn = (int)sizeof head_msg - 1;
    size_t room = sizeof err->message - (size_t)hn;
    char *tail = malloc(room);
    if (tail) log_tail(log, tail, room);
    grid_error_set(err, GRID_ERR_BUILD, 0, 0, "%s%s", head_msg, tail ? tail : "");
    grid_error_path(err, failed_log ? failed_log : log);
    free(tail);
    return GRID_ERR_BUILD;
}
