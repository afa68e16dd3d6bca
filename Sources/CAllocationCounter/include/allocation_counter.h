#ifndef CALLOCATIONCOUNTER_H
#define CALLOCATIONCOUNTER_H

// Counts the process's heap allocations, for `pipebench bench`'s "allocations per frame".
// Linked into the pipebench executable only: its malloc family takes precedence over libc's
// for the whole process (the executable comes first in symbol lookup), counts each call with
// one relaxed atomic add and hands it to glibc's own allocator.

/// Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made so far.
long mp_allocation_count(void);

/// 1 when the counter sees this process's allocations (one malloc made here, through a pointer
/// the compiler cannot see through, moved the count), 0 when another malloc won the symbol lookup.
int mp_allocation_counter_active(void);

#endif
