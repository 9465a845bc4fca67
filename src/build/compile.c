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

int grid_compile(const grid_toolchain *tc, const char *dir, const char *failed_log, double *seconds,
                 grid_error *err)
{
    char log[GRID_PATH_CAP];
    if (grid_pathf(log, sizeof log, "%s/robot.build.log", dir) != 0)
        return grid_cache_error(err, "write build log in", dir, ENAMETOOLONG);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return grid_cache_error(err, "create build log", log, errno);

    /* the header: the exact command, run in the entry directory */
    grid_buf head;
    grid_buf_init(&head);
    grid_buf_puts(&head, "# grid-rbd build log; command (run in the entry directory):\n# ");
    for (int i = 0; i < tc->argc; i++) {
        if (i) grid_buf_put(&head, " ", 1);
        put_shell_word(&head, tc->argv[i]);
    }
    grid_buf_puts(&head, "\n");
    if (head.data) (void)!write(fd, head.data, head.len);
    grid_buf_free(&head);

    double t0 = grid_now();
    int status = 0;
    int rc = grid_spawn(tc->argv, dir, fd, NULL, 0, &status);
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
