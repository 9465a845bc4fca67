/* Running the compiler on a generated source: argv without a shell, output to robot.build.log. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "build_internal.h"

#define LOG_TAIL_LINES 20
#define GRID_MAX_PARTS 16  /* translation units compiled at once */
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

/* write the command of a step to the log */
static void log_command(int fd, char *const argv[], const char *what)
{
    grid_buf head;
    grid_buf_init(&head);
    grid_buf_puts(&head, "# ");
    grid_buf_puts(&head, what);
    grid_buf_puts(&head, " (run in the entry directory):\n# ");
    for (int i = 0; argv[i]; i++) {
        if (i) grid_buf_put(&head, " ", 1);
        put_shell_word(&head, argv[i]);
    }
    grid_buf_puts(&head, "\n");
    if (head.data) (void)!write(fd, head.data, head.len);
    grid_buf_free(&head);
}

/* run the steps of one stage at once; the first failure's status wins */
static int run_stage(step_argv *steps, int n, const char *dir, int fd, int *status)
{
    pid_t pids[GRID_MAX_PARTS + 1];
    int rc = 0, started = 0;
    *status = 0;
    for (int i = 0; i < n; i++) {
        log_command(fd, steps[i].argv, n > 1 ? "grid-rbd build log; part command" : "grid-rbd build log; command");
        rc = grid_spawn_start(steps[i].argv, dir, fd, &pids[i]);
        if (rc) break;
        started++;
    }
    for (int i = 0; i < started; i++) {
        int st = 0;
        if (grid_spawn_wait(pids[i], &st) == 0 && *status == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            *status = st;
    }
    return rc;
}

int grid_compile(const grid_toolchain *tc, const char *dir, const char *failed_log, double *seconds,
                 grid_error *err)
{
    char log[GRID_PATH_CAP];
    if (grid_pathf(log, sizeof log, "%s/robot.build.log", dir) != 0)
        return grid_cache_error(err, "write build log in", dir, ENAMETOOLONG);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return grid_cache_error(err, "create build log", log, errno);

    /* one command, or the parts compiled at once and then linked */
    int parts = source_parts(dir, tc->source_name);
    step_argv *steps = calloc((size_t)parts + 1, sizeof *steps);
    if (!steps) {
        close(fd);
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory preparing the compile");
    }
    double t0 = grid_now();
    int status = 0, rc;
    if (parts == 1) {
        for (int i = 0; i < tc->argc && i < GRID_MAX_ARGS - 1; i++) steps[0].argv[i] = tc->argv[i];
        rc = run_stage(steps, 1, dir, fd, &status);
    } else {
        for (int p = 0; p < parts; p++) make_step(tc, p, parts, &steps[p]);
        rc = run_stage(steps, parts, dir, fd, &status);
        if (!rc && status == 0) {
            make_step(tc, -1, parts, &steps[parts]);
            rc = run_stage(&steps[parts], 1, dir, fd, &status);
        }
    }
    free(steps);
    double dt = grid_now() - t0;
    if (seconds) *seconds = dt;

    /* the footer: how it ended */
    char foot[128];
    int n;
    if (rc) n = snprintf(foot, sizeof foot, "# could not start the compiler: %s\n", strerror(rc));
    else if (WIFEXITED(status)) n = snprintf(foot, sizeof foot, "# exit status %d after %.2f s\n", WEXITSTATUS(status), dt);
    else n = snprintf(foot, sizeof foot, "# killed by signal %d after %.2f s\n", WTERMSIG(status), dt);
    (void)!write(fd, foot, (size_t)n);
    close(fd);

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
    free(tail);
    return GRID_ERR_BUILD;
}
