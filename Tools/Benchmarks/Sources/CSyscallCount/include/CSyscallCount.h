#ifndef C_SYSCALL_COUNT_H
#define C_SYSCALL_COUNT_H

#include <stdint.h>

/// System calls entered by every thread of this process since it started, or -1 when they
/// cannot be counted here (no tracefs, no perf events, or not Linux).
int64_t courier_syscall_count(void);

#endif
