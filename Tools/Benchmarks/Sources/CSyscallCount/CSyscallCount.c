// package-benchmark's `syscalls` metric is macOS only; on Linux it reads write and read system
// calls from /proc/self/io but no total. This counts every system call of the process with a
// counter on the raw_syscalls:sys_enter tracepoint, opened by a constructor before the process
// has a second thread: `inherit` then carries it to every thread made later (the event loops,
// the Swift concurrency pool, Dispatch's workers), and a read sums them all. `remove_on_exec`
// keeps it out of the programs this process starts (the benchmark's server): a child that
// execs drops it.
#include "CSyscallCount.h"

#if defined(__linux__)
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int counter = -1;

static long tracepoint_id(void) {
    static const char *const paths[] = {
        "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
        "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
    };
    for (size_t index = 0; index < sizeof(paths) / sizeof(paths[0]); index++) {
        FILE *file = fopen(paths[index], "r");
        if (file == NULL) continue;
        long id = -1;
        if (fscanf(file, "%ld", &id) != 1) id = -1;
        fclose(file);
        if (id >= 0) return id;
    }
    return -1;
}

__attribute__((constructor)) static void open_counter(void) {
    long id = tracepoint_id();
    if (id < 0) return;
    struct perf_event_attr attributes;
    memset(&attributes, 0, sizeof(attributes));
    attributes.type = PERF_TYPE_TRACEPOINT;
    attributes.size = sizeof(attributes);
    attributes.config = (unsigned long long)id;
    attributes.inherit = 1;
    attributes.remove_on_exec = 1;
    attributes.exclude_hv = 1;
    counter = (int)syscall(SYS_perf_event_open, &attributes, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int64_t courier_syscall_count(void) {
    if (counter < 0) return -1;
    uint64_t value = 0;
    if (read(counter, &value, sizeof(value)) != (ssize_t)sizeof(value)) return -1;
    return (int64_t)value;
}
#else
int64_t courier_syscall_count(void) { return -1; }
#endif
