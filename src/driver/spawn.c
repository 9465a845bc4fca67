/* Running programs (no shell) under a supervisor process that takes every descendant down with the caller, and finding programs on PATH. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include "build_internal.h"

/*
 * The process tree of a job (docs/cache.md, "Processes"):
 *
 *   caller (this process) --fork--> supervisor S (own process group, child subreaper)
 *                                      --fork+exec--> step (own process group) --> cc1, as, ld, cicc ...
 *
 * S starts the steps, at most job->jobs at a time, and reaps everything below it. S stops, kills every step's
 * process group and reaps until nothing is left when the caller dies (PR_SET_PDEATHSIG, a getppid() check and
 * EOF on a control pipe), when the caller cancels, or on SIGTERM/SIGINT/SIGHUP/SIGQUIT. A step gets
 * PR_SET_PDEATHSIG(SIGKILL), so it dies with S as well. S reports to the caller over a pipe, so the result
 * does not depend on the caller's SIGCHLD disposition.
 *
 * S is forked from a possibly multi-threaded process (Python), so it only makes system calls
 * (async-signal-safe functions): no malloc, no stdio. Everything it needs is prepared before the fork.
 */

extern char **environ;

#define JOB_TICK_MS 100          /* the caller's cancel check and S's getppid() check run this often */
#define JOB_REAP_MS 3000         /* S's bound on reaping killed processes */
#define JOB_CANCEL_WAIT_MS 5000  /* the caller's bound on S reporting after a cancel */
#define JOB_CAPTURE_MAX (1u << 20)

/* messages from S to the caller: {kind, a, b} */
enum { MSG_STARTED = 'P', MSG_RESULT = 'R', MSG_CANCELLED = 'C' };

/* fork without running pthread_atfork handlers where glibc allows it: the child only makes system calls */
static pid_t fork_raw(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return _Fork();
#else
    return fork();
#endif
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        len -= (size_t)w;
    }
}

/* ---- the supervisor (runs in the forked child: system calls only) ---- */

static volatile sig_atomic_t sup_stop;  /* the signal that asked S to stop; 0 while none did */

static void sup_on_signal(int sig)
{
    if (sig != SIGCHLD) sup_stop = sig;  /* SIGCHLD only wakes ppoll */
}

static void sup_send(int fd, int kind, int a, int b)
{
    int m[3] = {kind, a, b};
    write_all(fd, m, sizeof m); /* 12 bytes: one atomic pipe write */
}

static void close_span(unsigned lo, unsigned hi)
{
    if (lo > hi) return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, lo, hi, 0) == 0) return;
#endif
    struct rlimit rl;
    unsigned max = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max) max = (unsigned)rl.rlim_cur;
    for (unsigned fd = lo; fd <= hi && fd < max; fd++) close((int)fd);
}

/* close every descriptor above 2 except keep[0..n): S must not hold the caller's locks or pipes */
static void close_others(const int *keep, int n)
{
    int k[4], m = 0;
    for (int i = 0; i < n; i++)
        if (keep[i] > 2) k[m++] = keep[i];
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && k[j - 1] > k[j]; j--) {
            int t = k[j];
            k[j] = k[j - 1];
            k[j - 1] = t;
        }
    unsigned lo = 3;
    for (int i = 0; i < m; i++) {
        if ((unsigned)k[i] > lo) close_span(lo, (unsigned)k[i] - 1);
        lo = (unsigned)k[i] + 1;
    }
    close_span(lo, ~0u);
}

/* fork + exec one step in its own process group; its pid, or -1 with *start_err set */
static pid_t sup_start(const grid_job *job, int i, char *const envp[], int out, pid_t self, int *start_err)
{
    const grid_step *s = &job->steps[i];
    if (s->note && out >= 0) write_all(out, s->note, strlen(s->note));
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) != 0) {
        *start_err = errno;
        return -1;
    }
    pid_t pid = fork_raw();
    if (pid < 0) {
        *start_err = errno;
        close(ep[0]);
        close(ep[1]);
        return -1;
    }
    if (pid == 0) {
        int e = 0;
        setpgid(0, 0);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        if (getppid() != self) _exit(127); /* S died before the death signal was armed */
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0 || dup2(devnull, 0) < 0) e = errno;
        if (!e && dup2(out >= 0 ? out : devnull, 1) < 0) e = errno;
        if (!e && dup2(out >= 0 ? out : devnull, 2) < 0) e = errno;
        if (!e && job->cwd && chdir(job->cwd) != 0) e = errno;
        if (!e) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigaction(SIGPIPE, &dfl, NULL); /* S ignores it; exec keeps ignored signals ignored */
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            execve(s->argv[0], s->argv, envp);
            e = errno;
        }
        write_all(ep[1], &e, sizeof e);
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so the group exists before S may kill it */
    close(ep[1]);
    int e = 0;
    ssize_t r;
    do r = read(ep[0], &e, sizeof e); while (r < 0 && errno == EINTR);
    close(ep[0]);
    if (r == (ssize_t)sizeof e && e) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        *start_err = e;
        return -1;
    }
    return pid;
}

/* a decimal pid list ("12 345 ") as in /proc/<pid>/task/<pid>/children; kills each pid and its group */
static int kill_listed(const char *text, ssize_t n)
{
    int killed = 0;
    long v = -1;
    for (ssize_t i = 0; i <= n; i++) {
        char c = i < n ? text[i] : ' ';
        if (c >= '0' && c <= '9') {
            v = (v < 0 ? 0 : v * 10) + (c - '0');
        } else if (v > 0) {
            kill((pid_t)v, SIGKILL);   /* a child of S: its pid stays ours until S reaps it */
            kill(-(pid_t)v, SIGKILL);  /* and the group it leads, if it leads one */
            killed++;
            v = -1;
        }
    }
    return killed;
}

/* kill S's current children (steps and orphans re-parented to S) through /proc; -1 when /proc cannot say */
static int kill_children(pid_t self)
{
    char path[64] = "/proc/self/task/", num[24];
    int k = 0;
    unsigned long v = (unsigned long)self;
    do num[k++] = (char)('0' + v % 10); while ((v /= 10) > 0);
    size_t len = strlen(path);
    while (k > 0) path[len++] = num[--k];
    memcpy(path + len, "/children", 10);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[4096];
    ssize_t n;
    int killed = 0;
    do n = read(fd, buf, sizeof buf); while (n < 0 && errno == EINTR);
    if (n > 0) killed = kill_listed(buf, n);
    close(fd);
    return n < 0 ? -1 : killed;
}

/* kill every step that has not been reaped (its pid, hence its group id, is still reserved), then kill and
   reap every remaining descendant (orphans come to S, the subreaper) until none is left or ms passed */
static void sup_finish(const pid_t *pids, const char *reaped, int n, pid_t self, long ms)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0 && !reaped[i]) kill(-pids[i], SIGKILL);
    long deadline = now_ms() + ms;
    for (;;) {
        pid_t p;
        while ((p = waitpid(-1, NULL, WNOHANG)) > 0) {}
        if (p < 0 && errno == ECHILD) return;
        if (now_ms() > deadline) return;
        if (kill_children(self) < 0)
            for (int i = 0; i < n; i++)
                if (pids[i] > 0) kill(-pids[i], SIGKILL);
        sleep_ms(5);
    }
}

static void supervise(const grid_job *job, char *const envp[], int ctl, int res, int out, pid_t parent)
{
    pid_t self = getpid();
    setpgid(0, 0);
    /* signals: all default, then ours; they stay blocked (the caller blocked all) except inside ppoll */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) sigaction(s, &sa, NULL);
    static const int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    sigset_t wake;
    sigfillset(&wake);
    sa.sa_handler = sup_on_signal;
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        sigaction(handled[i], &sa, NULL);
        sigdelset(&wake, handled[i]);
    }
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    if (getppid() != parent) sup_stop = SIGTERM; /* the caller died before the death signal was armed */
    int keep[3] = {ctl, res, out};
    close_others(keep, 3);
    /* nor the caller's stdin/stdout/stderr (a pipe someone waits to see closed) */
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2 && dn >= 0; fd++)
        if (fd != ctl && fd != res && fd != out && fd != dn) dup2(dn, fd);
    if (dn > 2) close(dn);

    pid_t pids[GRID_JOB_MAX_STEPS];
    char reaped[GRID_JOB_MAX_STEPS];
    memset(pids, 0, sizeof pids);
    memset(reaped, 0, sizeof reaped);
    int status = 0, start_err = 0, running = 0, next = 0;
    for (int st = 0; st < job->nstages && !sup_stop && !status && !start_err; st++) {
        int end = next + job->stage_len[st];
        for (;;) {
            while (!sup_stop && !status && !start_err && next < end && running < job->jobs) {
                pid_t p = sup_start(job, next, envp, out, self, &start_err);
                if (p < 0) break;
                pids[next] = p;
                sup_send(res, MSG_STARTED, next, (int)p);
                next++;
                running++;
            }
            /* reap what ended: our steps, and orphans re-parented to S */
            int wst;
            pid_t p;
            while ((p = waitpid(-1, &wst, WNOHANG)) > 0)
                for (int i = 0; i < next; i++)
                    if (pids[i] == p && !reaped[i]) {
                        reaped[i] = 1;
                        running--;
                        if (!status && !(WIFEXITED(wst) && WEXITSTATUS(wst) == 0)) status = wst;
                    }
            if (sup_stop || (running == 0 && (next >= end || status || start_err))) break;
            struct pollfd pf = {ctl, POLLIN, 0};
            struct timespec tick = {0, JOB_TICK_MS * 1000000L};
            if (ppoll(&pf, 1, &tick, &wake) > 0) {
                char c;
                ssize_t r = read(ctl, &c, 1);
                if (r == 0 || (r == 1 && c == 'k')) sup_stop = SIGTERM; /* EOF: the caller is gone */
            }
            if (getppid() != parent) sup_stop = SIGTERM;
        }
    }
    sup_finish(pids, reaped, next, self, JOB_REAP_MS);
    if (sup_stop) {
        sup_send(res, MSG_CANCELLED, sup_stop, 0);
        _exit(1);
    }
    sup_send(res, MSG_RESULT, start_err, status);
    _exit(0);
}

/* ---- the caller's side ---- */

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

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* read what is there from the capture pipe; closes it at EOF */
static void read_capture(int *fd, grid_buf *capture)
{
    char chunk[4096];
    ssize_t r = read(*fd, chunk, sizeof chunk);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (r <= 0) {
        close_fd(fd);
        return;
    }
    if (capture && capture->len < JOB_CAPTURE_MAX) grid_buf_put(capture, chunk, (size_t)r);
}

int grid_run_job(const grid_job *job, grid_job_result *r)
{
    memset(r, 0, sizeof *r);
    int total = 0;
    for (int s = 0; s < job->nstages; s++) total += job->stage_len[s];
    if (job->nstages < 1 || job->nstages > GRID_JOB_MAX_STAGES || total < 1 || total > GRID_JOB_MAX_STEPS)
        return EINVAL;
    grid_job j = *job;
    if (j.jobs < 1) j.jobs = 1;

    char **envp = environ;
    if (j.c_locale && !(envp = c_locale_environ())) return ENOMEM;
    int ctl[2] = {-1, -1}, res[2] = {-1, -1}, cap[2] = {-1, -1};
    int e = 0;
    if (pipe2(ctl, O_CLOEXEC) != 0 || pipe2(res, O_CLOEXEC) != 0 ||
        (j.out_fd < 0 && j.capture && pipe2(cap, O_CLOEXEC) != 0))
        e = errno;
    pid_t sup = -1;
    if (!e) {
        int out = j.out_fd >= 0 ? j.out_fd : cap[1];
        pid_t parent = getpid();
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* S starts with every signal blocked */
        sup = fork_raw();
        if (sup == 0) {
            close(ctl[1]);
            close(res[0]);
            if (cap[0] >= 0) close(cap[0]);
            supervise(&j, envp, ctl[0], res[1], out, parent);
            _exit(127);
        }
        if (sup < 0) e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (envp != environ) free(envp);
    close_fd(&ctl[0]);
    close_fd(&res[1]);
    close_fd(&cap[1]);
    if (e) {
        close_fd(&ctl[1]);
        close_fd(&res[0]);
        close_fd(&cap[0]);
        return e;
    }
    setpgid(sup, sup);

    /* wait for S's messages, draining the capture, checking the cancel callback every tick */
    pid_t steps[GRID_JOB_MAX_STEPS];
    memset(steps, 0, sizeof steps);
    int msg[3], got = 0, done = 0;
    long cancel_deadline = 0;
    const long time_limit = j.timeout_ms > 0 ? now_ms() + j.timeout_ms : 0;
    while (res[0] >= 0) {
        struct pollfd pf[2] = {{res[0], POLLIN, 0}, {cap[0], POLLIN, 0}};
        int n = poll(pf, cap[0] >= 0 ? 2 : 1, JOB_TICK_MS);
        if (n > 0 && cap[0] >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) read_capture(&cap[0], j.capture);
        if (n > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = read(res[0], (char *)msg + got, sizeof msg - (size_t)got);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                close_fd(&res[0]); /* EOF: S has exited */
                break;
            }
            got += (int)k;
            if (got == (int)sizeof msg) {
                got = 0;
                if (msg[0] == MSG_STARTED && msg[1] >= 0 && msg[1] < GRID_JOB_MAX_STEPS) steps[msg[1]] = msg[2];
                else if (msg[0] == MSG_RESULT) {
                    r->start_errno = msg[1];
                    r->status = msg[2];
                    done = 1;
                } else if (msg[0] == MSG_CANCELLED) {
                    if (!r->timed_out) r->cancelled = 1;
                    done = 1;
                }
            }
        }
        /* a cancel or the time limit: ask S to stop everything (the same path for both) */
        if (!cancel_deadline && !done && time_limit && now_ms() > time_limit) r->timed_out = 1;
        else if (!cancel_deadline && !done && j.cancel && j.cancel(j.cancel_ctx)) r->cancelled = 1;
        if (!cancel_deadline && (r->timed_out || r->cancelled) && !done) {
            write_all(ctl[1], "k", 1);
            cancel_deadline = now_ms() + JOB_CANCEL_WAIT_MS;
        }
        if (cancel_deadline && now_ms() > cancel_deadline) {
            kill(-sup, SIGKILL); /* S did not answer: take it down ourselves (below) */
            cancel_deadline = now_ms() + 1000000;
        }
    }
    close_fd(&ctl[1]);
    int sst = 0;
    pid_t w;
    while ((w = waitpid(sup, &sst, 0)) < 0 && errno == EINTR) {}
    if (!done) {
        /* S died without reporting (killed from outside): its steps have PDEATHSIG; kill their groups too */
        for (int i = 0; i < GRID_JOB_MAX_STEPS; i++)
            if (steps[i] > 0) kill(-steps[i], SIGKILL);
        if (!r->cancelled && !r->timed_out) {
            r->status = w == sup && sst ? sst : SIGKILL; /* a wait status: killed by a signal */
            r->supervisor_died = 1;
        }
    }
    /* the rest of the output: the writers are gone, so EOF comes at once */
    long deadline = now_ms() + 1000;
    while (cap[0] >= 0 && now_ms() < deadline) {
        struct pollfd pf = {cap[0], POLLIN, 0};
        if (poll(&pf, 1, 100) > 0) read_capture(&cap[0], j.capture);
    }
    close_fd(&cap[0]);
    return 0;
}

int grid_spawn(char *const argv[], grid_buf *capture, long timeout_ms, grid_cancel_fn cancel, void *cancel_ctx,
               grid_job_result *r)
{
    grid_step step = {argv, NULL};
    grid_job job;
    memset(&job, 0, sizeof job);
    job.steps = &step;
    job.nstages = 1;
    job.stage_len[0] = 1;
    job.jobs = 1;
    job.out_fd = -1;
    job.capture = capture;
    job.c_locale = 1;
    job.cancel = cancel;
    job.cancel_ctx = cancel_ctx;
    job.timeout_ms = timeout_ms;
    int rc = grid_run_job(&job, r);
    if (rc) return rc;
    return r->start_errno;
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
