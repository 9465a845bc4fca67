/* Running a program without a shell (argv as given) and finding programs on PATH. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "build_internal.h"

extern char **environ;

#if !defined(GRID_FORCE_FORK_SPAWN) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
#define GRID_HAVE_SPAWN_CHDIR 1
#else
#define GRID_HAVE_SPAWN_CHDIR 0
#endif

/* a copy of environ with LC_ALL=C (and no other LC_ALL); NULL on oom */
static char **c_locale_environ(void)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **env = malloc((n + 2) * sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LC_ALL=", 7) != 0) env[k++] = environ[i];
    env[k++] = "LC_ALL=C";
    env[k] = NULL;
    return env;
}

/* start the child; returns 0 with *pid, or an errno value */
static int start_child(char *const argv[], const char *cwd, int out_fd, char **envp, pid_t *pid)
{
#if GRID_HAVE_SPAWN_CHDIR
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc) return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    /* default signal dispositions and mask in the child, whatever the host process (Python) set */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc && out_fd >= 0) rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    if (!rc && out_fd >= 0) rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    if (!rc && out_fd < 0) rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (!rc && out_fd < 0) rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!rc && cwd) rc = posix_spawn_file_actions_addchdir_np(&fa, cwd);
    if (!rc) rc = posix_spawn(pid, argv[0], &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
#else
    /* fork + exec: only async-signal-safe calls in the child; exec failure reported through a pipe */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) return errno;
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (child == 0) {
        int e = 0;
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0 || dup2(devnull, 0) < 0) e = errno;
        if (!e && dup2(out_fd >= 0 ? out_fd : devnull, 1) < 0) e = errno;
        if (!e && dup2(out_fd >= 0 ? out_fd : devnull, 2) < 0) e = errno;
        if (!e && cwd && chdir(cwd) != 0) e = errno;
        if (!e) {
            execve(argv[0], argv, envp);
            e = errno;
        }
        (void)!write(pfd[1], &e, sizeof e);
        _exit(127);
    }
    close(pfd[1]);
    int e = 0;
    ssize_t r;
    do r = read(pfd[0], &e, sizeof e); while (r < 0 && errno == EINTR);
    close(pfd[0]);
    if (r == (ssize_t)sizeof e && e) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        return e;
    }
    *pid = child;
    return 0;
#endif
}

int grid_spawn(char *const argv[], const char *cwd, int out_fd, grid_buf *capture, int c_locale, int *wstatus)
{
    char **envp = environ;
    if (c_locale && !(envp = c_locale_environ())) return ENOMEM;
    /* capture: the child's output goes into a pipe we drain */
    int pfd[2] = {-1, -1};
    if (out_fd < 0 && capture) {
        if (pipe2(pfd, O_CLOEXEC) != 0) {
            int e = errno;
            if (envp != environ) free(envp);
            return e;
        }
        out_fd = pfd[1];
    }
    pid_t pid = -1;
    int rc = start_child(argv, cwd, out_fd, envp, &pid);
    if (envp != environ) free(envp);
    if (pfd[1] >= 0) close(pfd[1]);
    if (pfd[0] >= 0) {
        char chunk[4096];
        for (;;) {
            ssize_t r = read(pfd[0], chunk, sizeof chunk);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            if (capture->len < (1u << 20)) grid_buf_put(capture, chunk, (size_t)r);
        }
        close(pfd[0]);
    }
    if (rc) return rc;
    /* wait for it, retrying on signals */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) return errno;
    }
    *wstatus = st;
    return 0;
}

/* 0 for an existing, executable, non-directory file, else an errno value */
static int program_error(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return access(path, X_OK) == 0 ? 0 : errno;
}

int grid_find_program(const char *name, char *out, size_t cap)
{
    if (!name || !*name) return ENOENT;
    /* a path: check it, make it absolute */
    if (strchr(name, '/')) {
        int e = program_error(name);
        if (e) return e;
        if (name[0] == '/') {
            if (snprintf(out, cap, "%s", name) >= (int)cap) return ENAMETOOLONG;
            return 0;
        }
        char cwd[GRID_PATH_CAP];
        if (!getcwd(cwd, sizeof cwd)) return errno;
        if (snprintf(out, cap, "%s/%s", cwd, name) >= (int)cap) return ENAMETOOLONG;
        return 0;
    }
    /* a bare name: the first match on PATH */
    const char *path = grid_env("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char cand[GRID_PATH_CAP];
        int w = n ? snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, name) : snprintf(cand, sizeof cand, "./%s", name);
        if (w > 0 && w < (int)sizeof cand && cand[0] == '/' && program_error(cand) == 0) {
            if (snprintf(out, cap, "%s", cand) >= (int)cap) return ENAMETOOLONG;
            return 0;
        }
        p += n;
        if (*p == ':') p++;
    }
    return ENOENT;
}

int grid_spawn_start(char *const argv[], const char *cwd, int out_fd, pid_t *pid)
{
    return start_child(argv, cwd, out_fd, environ, pid);
}

int grid_spawn_wait(pid_t pid, int *wstatus)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) return errno;
    }
    *wstatus = st;
    return 0;
}
