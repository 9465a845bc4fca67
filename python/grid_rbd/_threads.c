/* Threads of one batched call: the bound on num_threads, the clamp to the CPUs this process may run on (a request
   for 1000 threads never asks libgomp for 1000, whose failure to create them ends the process), and one thread in a
   child forked after a multi-threaded call (libgomp's thread pool does not survive fork: its first team would hang). */
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "_core.h"

static int team_started;      /* a call of this process (or of a parent before fork) ran on more than one thread */
static int forked_after_team; /* this process is a fork() child of one where team_started was set */

static void on_fork_child(void)
{
    if (team_started) forked_after_team = 1;
}

int grid_py_threads_init(void)
{
    static int done;
    if (!done && pthread_atfork(NULL, NULL, on_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
        return -1;
    }
    done = 1;
    return 0;
}

int grid_py_threads_cpus(void)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) {
        long online = sysconf(_SC_NPROCESSORS_ONLN); /* more CPUs than a cpu_set_t holds, or no affinity */
        n = online < 1 ? 1 : online > GRID_PY_MAX_THREADS ? GRID_PY_MAX_THREADS : (int)online;
    }
    return n;
}

int grid_py_threads_used(int requested, int cpus)
{
    if (forked_after_team) return 1;
    const int n = requested > 0 && requested < cpus ? requested : cpus;
    return n < 1 ? 1 : n;
}

int grid_py_threads_for_call(int requested, int cpus)
{
    const int n = grid_py_threads_used(requested, cpus);
    if (n > 1) team_started = 1; /* set before the team exists, under the GIL */
    return n;
}
